#!/usr/bin/env bash
# Part 1: a small Korean/English journal written with relative dates, then processed by the real bundled model.
set -euo pipefail
export ZK_HOME=/tmp/demo/home ZK_NO_WORKER=1
zk() { python3 -m zettel_amem "$@"; }
rm -rf "$ZK_HOME"
zk add "새해 목표: 매주 여의도 한강공원에서 10km 달리기. #달리기 #목표" --at "2 weeks ago"
zk add "회사 프로젝트 '온비서' 킥오프. PM은 지수 님, 백엔드는 내가 맡기로 했다. DB는 SQLite로 시작. #온비서" --at "10일 전"
zk add "Ran 10 km at Yeouido in 58 minutes. Cold but clear. #running #달리기" --at "지난주 금요일"
zk add "The Onbiseo search endpoint is slow on 50k notes; need an index. #온비서" --at "last tuesday 6pm"
zk add "Lunch with Mina. She is moving to Busan in April for a new job." --at "3 days ago"
zk add "한강 10km, 55분. 새 러닝화가 확실히 편하다. #달리기" --at "그저께 아침"
zk add "아빠 무릎 수술 날짜가 잡혔다. 그 주에 휴가를 내야 한다. #가족" --at "어제 저녁 9시"
zk add "Migrated Onbiseo staging to PostgreSQL; search is 4x faster with the new index. #온비서" --at "yesterday 6pm"
zk add "오늘 천천히 3km만 뛰었다. 무릎이 조금 시큰하다. #달리기" --at "오늘 아침"
time flock /tmp/zk-llm.lock python3 -m zettel_amem process --quiet
zk stats
