"""`drover-worker`: drover.worker.service."""

from drover.worker.service import main

if __name__ == "__main__":
    main()
