"""The live service's HTTP side: the FastAPI app (``app``), request and response models
(``models``), authentication (``auth``), request guards (``guard``), the command-line client
(``client``) and the dashboard's static files."""
