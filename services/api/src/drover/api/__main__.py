"""`drover-api`: serve the HTTP API (default 127.0.0.1:4646)."""

from drover.api.server import main

if __name__ == "__main__":
    main()
