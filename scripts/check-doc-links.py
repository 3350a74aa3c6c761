#!/usr/bin/env python3
"""Every relative link of the documentation resolves (ctest -R doc_links).

Checks README.md, CONTRIBUTING.md and docs/*.md: a link to a file names a file of the
repository, and a link to `#anchor` (in the same page or another) names a heading of that
page, spelled as GitHub spells heading anchors. External links (http:, https:, mailto:) are
not followed. Links inside code blocks and code spans are not links.

Usage: scripts/check-doc-links.py [ROOT]
Exit 1 with one line per broken link (file:line: target: why).
"""
import glob
import os
import re
import sys

LINK = re.compile(r'\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]*)(?:\s+"[^"]*")?\)')
HEADING = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')


def strip_code_spans(line):
    return re.sub(r'`+[^`]*`+', lambda m: ' ' * len(m.group(0)), line)


def slug(title):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    title = re.sub(r'<[^>]+>', '', title)
    title = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', title)  # a link: its text
    title = title.lower()
    title = ''.join(c for c in title if c.isalnum() or c in ' -_')
    return title.replace(' ', '-')


def lines_outside_code(path):
    inside = False
    for number, line in enumerate(open(path, encoding='utf-8'), 1):
        if line.lstrip().startswith('```'):
            inside = not inside
            continue
        if not inside:
            yield number, line.rstrip('\n')


def anchors(path, cache={}):
    if path not in cache:
        seen, found = {}, set()
        for _, line in lines_outside_code(path):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else '%s-%d' % (base, n))
        for _, line in lines_outside_code(path):  # <a id="..."> / name="..."
            for m in re.finditer(r'<a\s+(?:id|name)="([^"]+)"', line):
                found.add(m.group(1))
        cache[path] = found
    return cache[path]


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    pages = [os.path.join(root, p) for p in ('README.md', 'CONTRIBUTING.md')]
    pages += sorted(glob.glob(os.path.join(root, 'docs', '*.md')))
    broken = []
    for page in pages:
        if not os.path.exists(page):
            continue
        for number, line in lines_outside_code(page):
            for m in LINK.finditer(strip_code_spans(line)):
                target = m.group(1)
                if not target:
                    broken.append('%s:%d: %s: an empty link target' % (
                        os.path.relpath(page, root), number, m.group(0)))
                    continue
                if re.match(r'^[a-z]+:', target):
                    continue
                path, _, anchor = target.partition('#')
                where = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path \
                    else page
                why = None
                if not os.path.exists(where):
                    why = 'no such file'
                elif anchor and where.endswith('.md') and anchor not in anchors(where):
                    why = 'no heading with this anchor in %s' % os.path.relpath(where, root)
                if why:
                    broken.append('%s:%d: %s: %s' % (os.path.relpath(page, root), number,
                                                     target, why))
    for b in broken:
        print(b)
    if broken:
        print('%d broken link(s)' % len(broken), file=sys.stderr)
        return 1
    print('doc links: %d pages, every relative link resolves' % len(pages))
    return 0


if __name__ == '__main__':
    sys.exit(main())
