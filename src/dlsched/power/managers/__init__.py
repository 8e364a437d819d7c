"""Power manager plugins: every module here defining a :class:`PowerManager` subclass with a
``name`` is found by :func:`dlsched.power.registry.power_managers`."""
