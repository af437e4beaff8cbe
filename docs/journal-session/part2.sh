#!/usr/bin/env bash
# Part 2: the journal session shown in the README (run after part1.sh).
set -uo pipefail
export ZK_HOME=/tmp/demo/home ZK_NO_WORKER=1 COLUMNS=100
zk() { python3 -m zettel_amem "$@"; }
show() { echo; echo "\$ $*"; "$@"; }
cd /tmp/demo
show env EDITOR="python3 /tmp/demo/fill-daily.py" python3 -m zettel_amem add --template daily
TODAY=$(zk on 오늘 --json | python3 -c "import json,sys; print([n['id'][:8] for n in json.load(sys.stdin) if '3km' in n['content']][0])")
show env EDITOR="python3 /tmp/demo/fix-typo.py" python3 -m zettel_amem edit "$TODAY"
echo; echo "\$ zk process   # the real bundled model re-annotates and re-links both"
flock /tmp/zk-llm.lock python3 -m zettel_amem process --quiet
show zk history "$TODAY"
show zk on 어제
show zk on "지난주 금요일"
show zk list --tag 달리기
show zk tags
show zk search 무릎 --tag 달리기 --limit 2
show zk export --format markdown /tmp/demo/vault
echo; echo "\$ find vault -type f | sort"; (cd /tmp/demo && find vault -type f | sort)
P=$(ls /tmp/demo/vault/notes/ | head -1)
echo; echo "\$ cat vault/notes/$TODAY.md"; cat "/tmp/demo/vault/notes/$TODAY.md"
show zk graph --html /tmp/demo/graph.html
