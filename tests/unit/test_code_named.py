"""What a memory names in code and what a file holds of it after an edit (no git here: the
repository tests are tests/daemon/test_code_anchors.py and test_code_churn.py)."""

from __future__ import annotations

from mnemo.code.anchors import bare_names, named_paths
from mnemo.code.check import CodeFlag
from mnemo.code.named import holds_symbol, holds_value, named_symbols, named_values
from mnemo.code.sites import Reading, anchors_value, read_value

LB = 'resource "aws_lb" "gateway" {\n  name        = "gateway"\n  timeout_sec = 600\n  idle_sec    = 600\n}\n'
MEMORY = "The gateway timeout is 600 s via timeout_sec in lb.tf"


def test_a_value_is_a_whole_number_with_its_unit_not_part_of_a_name_a_version_or_a_longer_number() -> None:
    assert named_values(["600 s, 30s, 512Mi, Python 3.11, v2.4.1, x86, 6000 and 0.75; three retries"]) == [
        "600",
        "30",
        "512",
        "3.11",
        "6000",
        "0.75",
        "3",
    ]
    assert holds_value("timeout: 600s", "600") and holds_value("memory: 512Mi", "512")
    assert not holds_value("6000 1600 600.5 v600 600_000", "600")


def test_symbols_are_code_like_names_and_spans_written_as_code() -> None:
    text = "`make migrate` runs alembic; TIMEOUT_S, maxRetries and ErrNotFound live in app.py, not Timeout"
    assert named_symbols([text]) == ["make migrate", "TIMEOUT_S", "maxRetries", "ErrNotFound"]
    assert holds_symbol("migrate:\n\tmake  migrate", "make migrate")
    assert not holds_symbol("timeout_sec = 600", "timeout")
    assert holds_symbol("self.timeout_sec = 600", "timeout_sec")


def test_reformatting_and_moving_the_block_keep_the_value_held() -> None:
    realigned = LB.replace("  timeout_sec = 600\n", "").replace(
        "}\n", "  extra_long_setting = 5\n  timeout_sec        = 600\n}\n"
    )
    assert read_value(LB, realigned, "600", MEMORY) == Reading("600", "held")
    moved = "# the gateway\n" + realigned.replace('"gateway" {', "'gateway' {")
    assert read_value(LB, moved, "600", MEMORY).state == "held"


def test_a_new_number_on_the_line_the_memory_means_is_read_even_where_the_old_one_stays_elsewhere() -> None:
    # idle_sec keeps 600: the value is still in the file, but not where the memory's line had it.
    changed = LB.replace("timeout_sec = 600", "timeout_sec = 900")
    assert read_value(LB, changed, "600", MEMORY) == Reading(
        "600", "changed", now="900", line="timeout_sec = 900"
    )


def test_of_two_sites_with_one_name_the_one_under_the_line_the_memory_names_is_read() -> None:
    before = "resources:\n  requests:\n    memory: 512Mi\n  limits:\n    memory: 512Mi\n"
    after = before.replace("limits:\n    memory: 512Mi", "limits:\n    memory: 768Mi")
    memory = "the worker is capped at a 512Mi memory limit"
    assert read_value(before, after, "512", memory) == Reading(
        "512", "changed", now="768", line="memory: 768Mi"
    )
    requests = "the worker requests 512Mi of memory"
    assert read_value(before, after, "512", requests).state == "held"


def test_a_value_replaced_by_an_expression_is_gone_and_a_rewritten_line_is_read_by_presence() -> None:
    before = "jobs:\n  deploy:\n    timeout-minutes: 20\n"
    expression = (
        "inputs:\n  timeout:\n    default: 20\njobs:\n  deploy:\n    timeout-minutes: ${{ inputs.timeout }}\n"
    )
    assert read_value(before, expression, "20", "the deploy job's timeout-minutes is 20").state == "gone"
    rewritten = "jobs:\n  deploy:\n    limits: {minutes: 20}\n"
    assert read_value(before, rewritten, "20", "the deploy job's timeout-minutes is 20").state == "held"
    assert read_value(before, "jobs: {}\n", "20", "the deploy job's timeout-minutes is 20").state == "gone"


def test_a_single_digit_is_anchored_only_where_its_line_shares_a_word_with_the_memory() -> None:
    tasks = "@shared_task(bind=True, max_retries=3)\ndef send_email(to):\n    pass\n"
    assert anchors_value(tasks, "3", "send_email retries up to 3 times")
    assert not anchors_value(tasks, "3", "we keep 3 environments")
    after = tasks.replace("max_retries=3", "max_retries=5")
    assert read_value(tasks, after, "3", "send_email retries up to 3 times").now == "5"


def test_files_are_named_by_path_by_name_with_extension_and_dotfiles_and_bare_names_by_their_case() -> None:
    assert named_paths(["see .travis.yml and .github/workflows/ci.yml"]) == [
        ".travis.yml",
        ".github/workflows/ci.yml",
    ]
    text = (
        "Tests run with make test (see the Makefile); `justfile` too. Deploy runs build; Makefile.am is made"
    )
    assert bare_names([text]) == ["Tests", "Makefile", "justfile", "Deploy"]


def test_a_flag_with_a_reading_says_what_the_code_says_now() -> None:
    since = "f2cec2d0fe4afad01db28451f60d3bf63def7f16"
    reading = Reading("600", "changed", now="900", line="timeout_sec = 900")
    flag = CodeFlag("changed", "infra/lb.tf", since, commits=("dbec04f",), readings=(reading,))
    assert flag.note() == "infra/lb.tf now has timeout_sec = 900 (was 600); changed in dbec04f"
    assert flag.stale
    both = CodeFlag("changed", "infra/lb.tf", since, readings=(reading,), missing=("idle_sec",))
    assert (
        both.note()
        == "infra/lb.tf now has timeout_sec = 900 (was 600); changed since f2cec2d; idle_sec no longer in it"
    )
    refreshed = CodeFlag("refreshed", "infra/lb.tf", since, blob="ab" * 20)
    assert not refreshed.stale and "still holds all the memory names" in refreshed.note()


def test_an_arithmetic_of_numbers_holds_its_result_and_a_range_or_a_date_is_no_arithmetic() -> None:
    before = "SESSION_COOKIE_AGE = 1209600\nPORTS = '8080-8090'\n"
    spelled = "SESSION_COOKIE_AGE = 60 * 60 * 24 * 14  # two weeks\nPORTS = '8080-8090'\n"
    memory = "sessions last 1209600 seconds (SESSION_COOKIE_AGE)"
    assert read_value(before, spelled, "1209600", memory).state == "held"
    shorter = spelled.replace("* 14", "* 7")
    assert read_value(before, shorter, "1209600", memory) == Reading(
        "1209600", "changed", now="604800", line="SESSION_COOKIE_AGE = 60 * 60 * 24 * 7"
    )
    moved = "# ports\nPORTS = '8080-8091'\n"
    assert read_value(before, moved, "8080", "the ports start at 8080 (PORTS)").state == "held"


def test_a_value_whose_unit_changed_is_gone_one_written_otherwise_is_held_and_separators_are_no_number() -> (
    None
):
    memory = "worker pods are capped at a 512Mi memory limit"
    assert read_value("memory: 512Mi\n", "memory: 1Gi\n", "512", memory).state == "gone"  # not "1Mi"
    assert read_value("memory: 512Mi\n", "memory: 768Mi\n", "512", memory).now == "768"
    assert read_value("timeout = 600\n", "timeout = 600.0\n", "600", "timeout 600").state == "held"
    assert (
        read_value("timeout_sec = 600\n", "timeout_sec = 1,200\n", "600", "timeout_sec 600").state == "gone"
    )
    assert named_values(["1,000 rows, 12,500 users and 3.11"]) == ["1000", "12500", "3.11"]
    assert not holds_value("sizes = [1,600]", "600")
    assert named_symbols(["set `timeout_sec = 600` in lb.tf, run `make deploy`"]) == [
        "make deploy",
        "timeout_sec",
    ]


def test_a_line_past_its_bound_is_read_by_presence_and_a_long_arithmetic_is_no_error() -> None:
    minified = '{"pad": "' + "x" * 5_000 + '", "timeout": 600}'
    assert read_value(minified, minified.replace('"pad"', '"padding"'), "600", "timeout 600").state == "held"
    assert read_value(minified, minified.replace("600", "900"), "600", "timeout 600").state == "gone"
    endless = "timeout_sec = 3 " + "* 1 " * 2_000 + "\n"
    assert read_value("timeout_sec = 3\n", endless, "3", "timeout_sec is 3").state in (
        "held",
        "changed",
        "gone",
    )
