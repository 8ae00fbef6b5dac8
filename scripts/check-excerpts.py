#!/usr/bin/env python3
"""Code in the Markdown pages that is an excerpt of a source file is the
source file's text, so that a page never shows code that no longer builds.

A page marks an excerpt with an HTML comment on the line before its fenced
code block:

    <!-- excerpt: examples/minimal/main.cc driver -->
    ```cpp
    ...
    ```

and the source file marks the same lines with comments `// [driver]` and
`// [driver end]` (or `# [...]`), which the excerpt leaves out. The lines
must be equal, except that the excerpt may drop a common indentation.
Without a region name (`<!-- excerpt: examples/minimal/main.cc -->`) the
excerpt is the whole file.

Usage: scripts/check-excerpts.py [repository root]
Checks every tracked *.md file; prints each excerpt that differs (with a
diff) or names a missing file or marker, and exits 1 if there is any.
"""
import difflib
import pathlib
import re
import subprocess
import sys

MARK = re.compile(r"^<!-- excerpt: (\S+)(?: ([\w.-]+))? -->$")


def region(source: pathlib.Path, name):
    lines = source.read_text().splitlines()
    if name is None:
        return lines
    begin = [i for i, line in enumerate(lines) if re.fullmatch(rf"\s*(//|#) \[{re.escape(name)}\]", line)]
    end = [i for i, line in enumerate(lines) if re.fullmatch(rf"\s*(//|#) \[{re.escape(name)} end\]", line)]
    if len(begin) != 1 or len(end) != 1 or end[0] < begin[0]:
        return None
    body = lines[begin[0] + 1 : end[0]]
    indent = min((len(l) - len(l.lstrip()) for l in body if l.strip()), default=0)
    return [l[indent:] for l in body]


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
    pages = subprocess.run(["git", "ls-files", "*.md"], cwd=root, check=True, capture_output=True, text=True)
    failures, checked = 0, 0
    for page in pages.stdout.split():
        lines = (root / page).read_text().splitlines()
        for i, line in enumerate(lines):
            m = MARK.match(line)
            if not m:
                continue
            checked += 1
            where = f"{page}:{i + 1}"
            file, name = m.groups()
            if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
                print(f"{where}: the excerpt marker is not followed by a fenced code block")
                failures += 1
                continue
            end = next((j for j in range(i + 2, len(lines)) if lines[j].startswith("```")), None)
            if end is None:
                print(f"{where}: the code block is not closed")
                failures += 1
                continue
            shown = lines[i + 2 : end]
            source = root / file
            if not source.is_file():
                print(f"{where}: {file} does not exist")
                failures += 1
                continue
            expected = region(source, name)
            if expected is None:
                print(f"{where}: {file} has no single '// [{name}]' ... '// [{name} end]' region")
                failures += 1
                continue
            if shown != expected:
                print(f"{where}: differs from {file}{f' [{name}]' if name else ''}:")
                sys.stdout.writelines(
                    l + "\n" for l in difflib.unified_diff(expected, shown, file, page, lineterm=""))
                failures += 1
    print(f"check-excerpts: {checked} excerpts, {failures} wrong")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
