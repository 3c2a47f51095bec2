"""`drover-broker`: drover.broker.service."""

from drover.broker.service import main

if __name__ == "__main__":
    main()
