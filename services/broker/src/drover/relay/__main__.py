"""`drover-relay`: drover.relay.service."""

from drover.relay.service import main

if __name__ == "__main__":
    main()
