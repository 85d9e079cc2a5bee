"""What a draft's *what* reads as by its form, beyond the English the rules began with and the
families each blind part of the real sessions brought (:mod:`mnemo.distill.forms`)."""

from __future__ import annotations

import pytest

from mnemo.distill.forms import junk_form


@pytest.mark.parametrize(
    ("what", "kind"),
    [
        # A command beyond English.
        ("删除分支 hotfix/fix-app-bottom-nav", "command"),  # delete the branch
        ("帮我配置一下字体", "command"),  # set up the font for me
        ("READMEを英語に翻訳してください", "command"),  # translate the README, please
        ("테스트 코드 추가해줘", "command"),  # add test code
        ("Сделай отчёт по продажам", "command"),  # make a sales report
        ("Ajoute un bouton de connexion", "command"),  # add a login button
        ("Bitte die Tests reparieren", "command"),  # please fix the tests
        # An approval, a find, and how the agent's work stands as it ends.
        ("PR #1 was approved by the user", "passive log"),
        ("The person accepted the proposed plan.", "work log"),
        ("The developer found the validate() method in the codebase.", "work log"),
        ("The bridge is now properly installed and ready to use.", "transient state"),
        ("The project is running healthily.", "transient state"),
        ("Chrome MCP is not installed in the environment", "transient state"),
        # What the code does (the code says so, whatever rule words it uses); what the agent chose.
        ("The pipeline parses `ANSWER:`", "code detail"),
        ("FS.read_md function returns a string", "code detail"),
        ("The API returns 404 for a missing user, never 500", "code detail"),
        ("The code agent decided to include the CLIP model in the project.", "session event"),
        # A work log beyond English.
        ("Миграция `1775748605144-enable-uae-only.ts` была выполнена", "work log"),
        ("Removido el import que no se usa en views.py", "work log"),
        ("Hecho, subido a main.", "work log"),
        ("Formateados 3 ficheros: shop/cart.py y shop/views.py", "work log"),
        ("Ajouté le bouton de connexion", "work log"),
        ("Hinzugefügt: die Tests für den Parser", "work log"),
        ("設定ファイルにトークンを追加しました。", "work log"),  # added the token to the config
        ("已完成登录页面的重构", "work log"),  # finished refactoring the login page
        ("테스트 코드를 추가했습니다", "work log"),  # added test code
    ],
)
def test_what_is_no_memory_beyond_the_first_rules_is_named_so(what: str, kind: str) -> None:
    assert junk_form(what) == kind


@pytest.mark.parametrize(
    "what",
    [
        "以后提交信息统一用英文",  # from now on commit messages are in English
        "今後はコメントを日本語で書いてください",  # from now on, comments in Japanese
        "Всегда пиши отчёт в Excel",  # always write the report in Excel
        "ローカルのgit設定にだけユーザー名を書く",  # a statement, not a request
        # What lasts says how things are, not that someone approved or found them.
        "Pull requests are approved by two reviewers before merging",
        "The API is installed as a systemd service on the GPU host",
        "Errors are returned as RFC 7807 problem documents",
        "The person decided to use GitHub Actions for deploying to Cloud Run",
        "Los despliegues se hacen los jueves desde main",  # how deploys are done
        "Миграции выполняются командой pnpm db:run",  # how migrations are run
        "キャッシュはRedisにしました",  # the cache: Redis was chosen
        "배포는 main 브랜치에서 하기로 했습니다",  # decided: deploys go from main
        "部署在Vercel上，配置文件放在仓库根目录",  # deployed on Vercel (a noun here)
        "デプロイは必ずmainブランチから行う",  # deploys always go from main
    ],
)
def test_a_memory_beyond_the_first_rules_is_not_named_junk(what: str) -> None:
    assert junk_form(what) == ""
