"""Job-duration estimators: predict how long a job will run from its metadata and history."""
