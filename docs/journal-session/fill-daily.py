# Stands in for typing in the editor: shows what it was opened on, then fills in the template.
import pathlib
import sys

path = pathlib.Path(sys.argv[1])
text = path.read_text(encoding="utf-8")
sys.stderr.write("--- the editor opened " + path.name + " with:\n" + text + "---\n")
text = (text.replace("## 오늘 한 일\n", "## 오늘 한 일\n온비서 베타 배포 준비. 저녁에 한강 5km. #달리기 #온비서\n")
            .replace("## 감사한 일\n", "## 감사한 일\n무릎이 덜 아프다.\n")
            .replace("## 내일 할 일\n", "## 내일 할 일\n현우 님과 인덱스 리뷰.\n"))
path.write_text(text, encoding="utf-8")
