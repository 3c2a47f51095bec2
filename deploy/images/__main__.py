"""`python -m deploy.images [name ...]`: build the named images (all when none is named)."""

import sys

from deploy.images import PARENTS, ensure

for name, image in ensure(sys.argv[1:] or list(PARENTS)).items():
    print(f"{name}: {image}")
