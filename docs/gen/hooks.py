"""mkdocs hook: regenerate docs/generated/ (compatibility table, API reference, benchmark charts,
graph picture) before every build, so the pages cannot drift from the code. See generate.py."""
import sys
from pathlib import Path


def on_pre_build(config, **kwargs):
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import generate

    generate.main()
