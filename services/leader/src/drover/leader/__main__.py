"""`drover-leader`: drover.leader.service."""

from drover.leader.service import main

if __name__ == "__main__":
    main()
