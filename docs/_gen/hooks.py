"""MkDocs hooks: the configuration and command-line references, generated from the code.

A page holding ``<!-- generated: configuration -->`` gets a table per typed config object
(:class:`~aeromq.broker.config.BrokerConfig`, the name server's, the producer's and the
consumer's: field, default, how to set it, meaning); one holding ``<!-- generated: cli -->``
gets every ``aeromq`` subcommand from its argparse parser (``aeromq._cli.parser_of``): usage,
every listed option with its help (which names the default and unit) and the examples. So the
reference cannot drift from the code; ``tests/docs/test_references.py`` checks that every field
and option appears.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import enum
import inspect
import itertools
import re
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

CONFIG_MARKER = "<!-- generated: configuration -->"
CLI_MARKER = "<!-- generated: cli -->"

# LitePullConsumerConfig's fields that carry no docstring of their own (RocketMQ's names, whose
# meaning RocketMQ's DefaultLitePullConsumer documents); the others are read from the source.
_CONSUMER_FIELDS = {
    "consumer_group": "the consumer group (required); members of a group share the queues",
    "message_model": "CLUSTERING (the group shares the queues) or BROADCASTING (each gets all)",
    "consume_from_where": "where a group with no committed offset starts: LAST_OFFSET, "
    "FIRST_OFFSET or TIMESTAMP",
    "auto_commit": "commit what poll returned, every auto_commit_interval_ms, on the next poll",
    "auto_commit_interval_ms": "how often auto commit commits (at least 1000)",
    "pull_batch_size": "messages asked for by one pull",
    "pull_threshold_for_all": "pulls pause while this many messages are cached in all",
    "pull_threshold_for_queue": "a queue's pulls pause while it has this many cached",
    "pull_threshold_size_for_queue_mib": "a queue's pulls pause while its cached bodies exceed this",
    "consume_max_span": "a queue's pulls pause while its cached offsets span more than this",
    "poll_timeout_ms": "how long poll() waits for a first message by default",
    "topic_metadata_check_interval_ms": "how often the topics' queues are checked for changes",
    "broker_suspend_max_time_ms": "how long the broker may hold a pull with no new message",
    "consumer_timeout_ms_when_suspend": "how long a held pull waits for its answer",
    "consumer_pull_timeout_ms": "timeout of a pull that the broker answers at once",
    "persist_consumer_offset_interval_ms": "how often committed offsets are sent to the broker",
    "heartbeat_broker_interval_ms": "how often the consumer heartbeats its group",
    "rebalance_interval_ms": "the periodic rebalance (members joining or leaving trigger one too)",
    "pull_time_delay_ms_when_exception": "a queue's next pull after a failed one",
    "pull_time_delay_ms_when_flow_control": "a queue's next pull check while over a threshold",
    "pull_time_delay_ms_when_pause": "a paused queue's next check",
    "pull_time_delay_ms_when_broker_busy": "a queue's next pull when the broker is busy",
}


# -- configuration ----------------------------------------------------------------------------


def _attribute_docs(cls: type) -> dict[str, str]:
    """``name -> docstring`` of the class attributes documented by a string under them."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    node = tree.body[0]
    assert isinstance(node, ast.ClassDef), f"{cls.__name__}'s source starts with its class"
    body = node.body
    docs: dict[str, str] = {}
    for node, after in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def _table_docs(cls: type) -> dict[str, str]:
    """``field -> meaning`` from a reST ``field default meaning`` table in the class docstring."""
    lines = (cls.__doc__ or "").splitlines()
    rules = [i for i, line in enumerate(lines) if line.strip().startswith("====")]
    if len(rules) < 3:
        return {}
    columns = [m.start() for m in re.finditer(r"=+", lines[rules[0]])]
    docs: dict[str, str] = {}
    name = ""
    for line in lines[rules[1] + 1 : rules[2]]:
        start = columns[0]
        if line[start:].strip() and not line[start].isspace():
            name = line[start:].split()[0]
            docs[name] = line[columns[2] :].strip()
        elif name:
            docs[name] += " " + line[columns[2] :].strip()
    return docs


def _default(field: dataclasses.Field[object]) -> object:
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def _shown(value: object, name: str) -> str:
    if value is None:
        return "none"
    if isinstance(value, enum.Enum):
        return value.name
    if name == "consume_timestamp_ms":
        return "half an hour ago"
    if name in ("data_dir", "offset_store_dir") and isinstance(value, Path):
        return (
            "~/" + str(value.relative_to(value.home()))
            if str(value).startswith(str(value.home()))
            else str(value)
        )
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int) and value >= 10_000:
        return f"{value:_}"
    return str(value)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _config_table(
    cls: type,
    describe: Callable[[str], str],
    how: Callable[[str], str],
    how_title: str,
    default: Callable[[str], str] | None = None,
) -> str:
    rows = [f"| field | default | {how_title} | meaning |", "|---|---|---|---|"]
    for field in dataclasses.fields(cls):
        if field.name.startswith("_"):
            continue
        shown = default(field.name) if default else _shown(_default(field), field.name)
        rows.append(
            f"| `{field.name}` | `{_cell(shown)}` "
            f"| {how(field.name)} | {_cell(describe(field.name))} |"
        )
    return "\n".join(rows)


def configuration_reference() -> str:
    """Markdown: one table per typed configuration object."""
    from aeromq.broker.config import (
        ENV_PREFIX,
        FIELD_HELP,
        BrokerConfig,
        describe_default,
        option_name,
    )
    from aeromq.broker.namesrv.config import ENV_PREFIX as NAMESRV_ENV
    from aeromq.broker.namesrv.config import FIELD_HELP as NAMESRV_HELP
    from aeromq.broker.namesrv.config import NameServerConfig
    from aeromq.consumer import LitePullConsumerConfig
    from aeromq.producer import ProducerConfig

    consumer_docs = {**_CONSUMER_FIELDS, **_attribute_docs(LitePullConsumerConfig)}
    producer_docs = _table_docs(ProducerConfig)
    parts = [
        "## Broker: `BrokerConfig`",
        "",
        "`aeromq broker` reads defaults < a TOML file (`--config PATH` or "
        "`$AEROMQ_BROKER_CONFIG`; keys are the field names, at the top level or under "
        f"`[broker]`) < environment (`{ENV_PREFIX}<FIELD>`) < options. Durations (`*_ms`) take "
        "a unit (`500ms`, `5s`; a bare number is milliseconds), sizes take `KiB`, `MiB`, `GiB`.",
        "",
        _config_table(
            BrokerConfig,
            FIELD_HELP.__getitem__,
            lambda n: f"`{option_name(n)}`<br>`{ENV_PREFIX}{n.upper()}`",
            "option / environment",
            describe_default,
        ),
        "",
        "## Name server: `NameServerConfig`",
        "",
        _config_table(
            NameServerConfig,
            NAMESRV_HELP.__getitem__,
            lambda n: f"`{option_name(n)}`<br>`{NAMESRV_ENV}{n.upper()}`",
            "option / environment",
        ),
        "",
        "## Producer: `ProducerConfig`",
        "",
        "`Producer(group, endpoints, config=ProducerConfig(...))`; `aeromq produce` sets "
        "`send_timeout_ms` (`--timeout`), `transport` and `aeron_dir`.",
        "",
        _config_table(
            ProducerConfig, lambda n: producer_docs.get(n, ""), lambda n: "keyword", "set as"
        ),
        "",
        "## Lite pull consumer: `LitePullConsumerConfig`",
        "",
        "`DefaultLitePullConsumer(config=LitePullConsumerConfig(consumer_group=..., ...))`; "
        "names and defaults are RocketMQ's, with units in the names.",
        "",
        _config_table(
            LitePullConsumerConfig,
            lambda n: consumer_docs.get(n, ""),
            lambda n: "keyword",
            "set as",
        ),
    ]
    return "\n".join(parts)


# -- command line -----------------------------------------------------------------------------


def _walk(
    parser: argparse.ArgumentParser, name: str
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _walk(sub, f"{name} {sub_name}")


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(
            action, argparse._HelpAction | argparse._SubParsersAction
        ):
            continue
        if action.option_strings:
            flags = ", ".join(action.option_strings)
            if action.nargs != 0:
                metavar = formatter._format_args(action, action.dest.upper())
                flags += f" {metavar}"
        else:
            flags = action.metavar if isinstance(action.metavar, str) else action.dest
        help_text = formatter._expand_help(action) if action.help else ""
        rows.append(f"| `{_cell(flags)}` | {_cell(help_text)} |")
    return rows


def cli_reference() -> str:
    """Markdown: every ``aeromq`` subcommand, from its parser."""
    from aeromq._cli import COMMANDS, parser_of

    parts: list[str] = []
    for command in sorted(COMMANDS):
        for name, parser in _walk(parser_of(command), f"aeromq {command}"):
            level = "##" if name.count(" ") == 1 else "###"
            parts += [f"{level} `{name}`", ""]
            if parser.description:
                parts += [parser.description, ""]
            usage = parser.format_usage().removeprefix("usage: ").strip()
            parts += ["```text", usage, "```", ""]
            rows = _option_rows(parser)
            if rows:
                parts += ["| option | meaning |", "|---|---|", *rows, ""]
            if parser.epilog:
                examples = [line.strip() for line in parser.epilog.splitlines()[1:] if line.strip()]
                commands = [line for line in examples if "aeromq" in line]
                notes = [line for line in examples if "aeromq" not in line]
                parts += ["Examples:", "", "```bash", *commands, "```", ""]
                parts += [*notes, ""] if notes else []
    return "\n".join(parts)


# -- the hook ---------------------------------------------------------------------------------


def on_page_markdown(markdown: str, **kwargs: object) -> str:
    """Replace the markers of a page with the references they name."""
    if CONFIG_MARKER in markdown:
        markdown = markdown.replace(CONFIG_MARKER, configuration_reference())
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    return markdown
