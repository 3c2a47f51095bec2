"""`drover-gc`: drover.gc.service."""

from drover.gc.service import main

if __name__ == "__main__":
    main()
