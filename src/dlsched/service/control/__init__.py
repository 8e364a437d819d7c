"""The live service's control side: the one controller that mirrors the store into job views,
plans with an ordering or an allocation policy and applies every Plan to a back end
(``controller``, ``planning``, ``elastic_planning``), its loop (``loop``), the views and
measurements the policies see (``live_job``, ``live_perf``, ``elastic_driver``, ...)."""
