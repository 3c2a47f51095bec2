"""`drover-planner`: drover.planner.service."""

from drover.planner.service import main

if __name__ == "__main__":
    main()
