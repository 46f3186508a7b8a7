"""Running the server beyond one process: worker processes sharing a port (Ray Serve and Kubernetes
live here too)."""
