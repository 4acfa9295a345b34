"""File and folder paths as users write them in a request, for the stages that read requests: routing reads a path
as its kind ("a folder", "a txt file"; `nexus.gate.gate.routing_text`), and the LLM path prefers a tool that can
take a path the request names (`nexus.llm.calls`). Standard library only.

>>> written_paths("Read /srv/data/a.txt, ~/notes, cat.JPG and repo/notes.md, not https://x.io/a.md, 4/5, U.S. or google.com")
['/srv/data/a.txt', '~/notes', 'cat.JPG', 'repo/notes.md']
>>> written_paths("List the branches of /ws/repo. Then read /ws/a.txt... and ./out.")
['/ws/repo', '/ws/a.txt', './out']
>>> written_paths("Go up to ../.. and list ~/..")
['../..', '~/..']
>>> [path_kind(p) for p in ("/srv/data/a.txt", "~/notes", "cat.JPG", "app.exe")]
['a txt file', 'a folder', 'a jpg file', 'an exe file']
"""

from __future__ import annotations

import re

# from the root, the home folder, the working folder or a drive ("/srv/a", "~/notes", "./out", "C:\\data"), with at
# least two characters after the first separator ("4/5", "/q" and dates are not paths), never inside a URL, and not
# ending in a dot: that is the sentence's full stop ("List the branches of /ws/repo." had read "/ws/repo.", which is
# not the repository path the set-up pins, so every git tool looked unable to take the path the turn writes), unless
# its last part is the parent folder ("../..")
_FS_PATH = r"(?<![\w.:/\\-])(?:[A-Za-z]:[\\/]|~[\\/]|\.{1,2}[\\/]|/)(?=[\w.-]{2})[\w.-]+(?:[\\/][\w.-]+)*[\\/]?(?:(?<!\.)|(?<=[\\/]\.\.))"
FILE_TYPES = frozenset(
    "txt md rst csv tsv json jsonl yaml yml toml ini cfg xml html htm log sql db sqlite py js ts java cpp go rs rb sh "
    "ipynb pdf doc docx xls xlsx ppt pptx odt png jpg jpeg gif svg webp bmp tif tiff mp3 wav mp4 mov avi zip tar gz "
    "tgz exe nii".split())
# a file name with a common file extension, bare or behind relative folders ("notes.txt", "repo/notes.md";
# "google.com", "D.C." are not)
_FILE_NAME = rf"(?<![\w./\\-])(?:[\w.-]+[\\/])*[\w-]{{2,}}(?:\.[\w-]+)*\.(?:{'|'.join(sorted(FILE_TYPES))})(?![\w/\\])"
PATHS = re.compile(f"{_FS_PATH}|{_FILE_NAME}", re.I)


def written_paths(text: str) -> list[str]:
    """The file and folder paths `text` writes, in order."""
    return PATHS.findall(text or "")


def path_kind(path: str) -> str:
    """What a path names, in words: "a folder", or "a txt file" for a common file extension."""
    ext = re.search(r"\.([A-Za-z0-9]{1,5})$", path.rstrip("/\\"))
    kind = ext.group(1).lower() if ext and ext.group(1).lower() in FILE_TYPES else None
    return "a folder" if kind is None else f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} file"
