"""Every template zk ships, in one folder: prompt templates (`*.txt`, string.Template `$name`
placeholders, read by `zettel_amem.prompts`) and note templates (`*.md`, for `zk add --template NAME`).

This folder sits at the top of the repository and is installed as the package `zettel_amem.templates`
(see `package-dir` in pyproject.toml). A file of the same name in `$ZK_HOME/templates/`, else in the
config dir's `templates/`, overrides the shipped one.
"""
