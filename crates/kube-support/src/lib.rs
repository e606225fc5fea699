//! What both binaries need of a Kubernetes API server (being extracted from the controller).
