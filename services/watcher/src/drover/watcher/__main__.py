"""`drover-watcher`: drover.watcher.service."""

from drover.watcher.service import main

if __name__ == "__main__":
    main()
