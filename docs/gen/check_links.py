"""Check the links of a built site: every relative `href`/`src` in the HTML must name a file that
exists (after mkdocs resolved the markdown links), and every `#anchor` into a page must exist in it.
`mkdocs build --strict` already fails on broken markdown links; this also covers links written as
HTML, images inside included snippets, and the theme's own assets.

    python docs/gen/check_links.py site
"""
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k == "id" and v:
                self.ids.add(v)
            if v and ((k == "href" and tag in ("a", "link")) or (k == "src" and tag in ("img", "script"))):
                self.links.append(v)


def parse(path, cache={}):
    if path not in cache:
        p = Links()
        p.feed(path.read_text(errors="replace"))
        cache[path] = p
    return cache[path]


def main(site):
    site = Path(site).resolve()
    broken = []
    pages = sorted(site.rglob("*.html"))
    for page in pages:
        for link in parse(page).links:
            u = urlsplit(link)
            if u.scheme or u.netloc or link.startswith(("mailto:", "data:", "javascript:")):
                continue  # external links are not checked (the build must not depend on the network)
            if not u.path:
                target = page
            elif u.path.startswith("/"):  # root-relative (the 404 page): from the site's root
                target = (site / unquote(u.path).lstrip("/")).resolve()
            else:
                target = (page.parent / unquote(u.path)).resolve()
            if u.path.endswith("/") or (target.is_dir()):
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(site)}: {link} (no {target})")
                continue
            if u.fragment and target.suffix == ".html" and not re.fullmatch(r"__.*", u.fragment):
                if u.fragment not in parse(target).ids:
                    broken.append(f"{page.relative_to(site)}: {link} (no anchor #{u.fragment})")
    for b in broken:
        print("broken link:", b)
    print(f"checked {len(pages)} pages: {len(broken)} broken links")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "site"))
