"""`drover-audit`: drover.audit.service."""

from drover.audit.service import main

if __name__ == "__main__":
    main()
