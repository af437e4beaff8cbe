# Stands in for fixing a note in the editor.
import pathlib
import sys

path = pathlib.Path(sys.argv[1])
text = path.read_text(encoding="utf-8")
sys.stderr.write("--- the editor opened " + path.name + " with:\n" + text + "---\n")
path.write_text(text.replace("3km만", "5km만"), encoding="utf-8")
