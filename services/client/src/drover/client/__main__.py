"""`drover-client` (also `drover agent`): drover.client.service."""

from drover.client.service import main

if __name__ == "__main__":
    main()
