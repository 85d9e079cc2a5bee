"""What a draft's *what* reads as by its form, beyond the English the rules began with and the
families each blind part of the real sessions brought (:mod:`mnemo.distill.forms`)."""

from __future__ import annotations

from mnemo.distill.forms import junk_form


def test_a_command_is_told_beyond_english_unless_it_says_it_stands() -> None:
    for what in (
        "删除分支 hotfix/fix-app-bottom-nav",  # delete the branch
        "帮我配置一下字体",  # set up the font for me
        "READMEを英語に翻訳してください",  # translate the README, please
        "테스트 코드 추가해줘",  # add test code
        "Сделай отчёт по продажам",  # make a sales report
        "Ajoute un bouton de connexion",  # add a login button
        "Bitte die Tests reparieren",  # please fix the tests
    ):
        assert junk_form(what) == "command", what
    assert junk_form("以后提交信息统一用英文") == ""  # from now on commit messages are in English
    assert junk_form("今後はコメントを日本語で書いてください") == ""  # from now on, comments in Japanese
    assert junk_form("Всегда пиши отчёт в Excel") == ""  # always write the report in Excel
    assert junk_form("ローカルのgit設定にだけユーザー名を書く") == ""  # a statement, not a request


def test_an_approval_a_find_and_how_the_agents_work_stands_as_it_ends_are_no_memories() -> None:
    assert junk_form("PR #1 was approved by the user") == "passive log"
    assert junk_form("The person accepted the proposed plan.") == "work log"
    assert junk_form("The developer found the validate() method in the codebase.") == "work log"
    assert junk_form("The bridge is now properly installed and ready to use.") == "transient state"
    assert junk_form("The project is running healthily.") == "transient state"
    assert junk_form("Chrome MCP is not installed in the environment") == "transient state"
    # What lasts says how things are, not that someone approved or found them.
    assert junk_form("Pull requests are approved by two reviewers before merging") == ""
    assert junk_form("The API is installed as a systemd service on the GPU host") == ""


def test_what_the_code_does_and_what_the_agent_chose_are_no_memories() -> None:
    assert junk_form("The pipeline parses `ANSWER:`") == "code detail"
    assert junk_form("FS.read_md function returns a string") == "code detail"
    assert junk_form("The code agent decided to include the CLIP model in the project.") == "session event"
    assert junk_form("The API returns 404 for a missing user, never 500") == "code detail"  # the code says so
    assert junk_form("Errors are returned as RFC 7807 problem documents") == ""
    assert junk_form("The person decided to use GitHub Actions for deploying to Cloud Run") == ""


def test_a_work_log_is_told_beyond_english() -> None:
    assert junk_form("Миграция `1775748605144-enable-uae-only.ts` была выполнена") == "work log"
    assert junk_form("Removido el import que no se usa en views.py") == "work log"
    assert junk_form("Hecho, subido a main.") == "work log"
    assert junk_form("Formateados 3 ficheros: shop/cart.py y shop/views.py") == "work log"
    assert junk_form("Ajouté le bouton de connexion") == "work log"
    assert junk_form("Hinzugefügt: die Tests für den Parser") == "work log"
    assert junk_form("Los despliegues se hacen los jueves desde main") == ""  # how deploys are done
    assert junk_form("設定ファイルにトークンを追加しました。") == "work log"  # added the token to the config
    assert junk_form("已完成登录页面的重构") == "work log"  # finished refactoring the login page
    assert junk_form("테스트 코드를 추가했습니다") == "work log"  # added test code
    assert junk_form("Миграции выполняются командой pnpm db:run") == ""  # how migrations are run
    assert junk_form("キャッシュはRedisにしました") == ""  # the cache: Redis was chosen
    assert junk_form("배포는 main 브랜치에서 하기로 했습니다") == ""  # decided: deploys go from main
    assert junk_form("部署在Vercel上，配置文件放在仓库根目录") == ""  # deployed on Vercel (a noun here)
    assert junk_form("デプロイは必ずmainブランチから行う") == ""  # deploys always go from main
