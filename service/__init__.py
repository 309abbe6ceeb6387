"""The proxy's I/O shell: the FastAPI app, the upstream client, SSE and the CLI around the
sans-IO `protocols` package."""
