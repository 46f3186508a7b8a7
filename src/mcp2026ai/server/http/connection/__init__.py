"""The HTTP connection layer below the ASGI app: uvicorn's httptools protocol with early refusals."""
