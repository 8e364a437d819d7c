"""Elastic scheduling policies, one module each (found by :mod:`dlsched.elastic.registry`)."""
