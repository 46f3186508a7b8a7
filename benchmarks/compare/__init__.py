"""Served throughput side by side: our server against its peers and the offline ceiling, and the tools measuring it."""
