"""Configuration: precedence, strictness, and the table of docs/configuration.md staying true."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from runjournal_server import config
from runjournal_server.app import (
    FDS_PER_OPEN_JOURNAL,
    RECEIVE_SLACK_BYTES,
    RECEIVE_WINDOW_BYTES,
    ServerStartError,
    grpc_options,
    open_journal_bound,
)


def parse(*flags: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    config.add_arguments(parser)
    return parser.parse_args(list(flags))


def test_defaults_are_the_embedded_file_backend_on_loopback():
    loaded = config.load(parse(), environ={})
    assert (loaded.backend, loaded.data_dir, loaded.listen) == ("file", Path("runjournal-data"), "127.0.0.1:50051")


def test_flags_win_over_environment_which_wins_over_the_file(tmp_path):
    file = tmp_path / "rj.toml"
    file.write_text('listen = "127.0.0.1:1"\nmax_record_bytes = 1000\nio_threads = 3\n')
    environ = {"RUNJOURNAL_CONFIG": str(file), "RUNJOURNAL_LISTEN": "127.0.0.1:2", "RUNJOURNAL_IO_THREADS": "4"}
    loaded = config.load(parse("--listen", "127.0.0.1:3"), environ=environ)
    assert (loaded.listen, loaded.io_threads, loaded.max_record_bytes) == ("127.0.0.1:3", 4, 1000)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nonsense = 1\n", "unknown setting"),
        ("max_record_bytes = -5\n", "max_record_bytes"),
        ('listen = "nowhere"\n', "HOST:PORT"),
        ('backend = "sqlite"\n', "must be one of"),
        ("this is not toml", "not valid TOML"),
    ],
)
def test_bad_config_files_are_refused_with_the_setting_named(tmp_path, text, message):
    file = tmp_path / "rj.toml"
    file.write_text(text)
    with pytest.raises(config.ConfigError, match=message):
        config.load(parse("--config", str(file)), environ={})


def test_bad_environment_value_is_refused():
    with pytest.raises(config.ConfigError, match="RUNJOURNAL_IO_THREADS"):
        config.load(parse(), environ={"RUNJOURNAL_IO_THREADS": "many"})


def test_the_configuration_page_lists_every_setting():
    page = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    for setting in config.SETTINGS:
        env = "RUNJOURNAL_" + setting.name.upper()
        flag = "--" + setting.name.replace("_", "-")
        assert f"`{setting.name}`" in page and env in page and flag in page, setting.name


def test_the_receive_limit_follows_the_record_and_batch_limits_and_the_send_limit_stays_large():
    loaded = config.load(parse("--max-record-bytes", "65536", "--max-batch-bytes", "3000000"), environ={})
    options = dict(grpc_options(loaded))
    assert options["grpc.max_receive_message_length"] == 3000000 + RECEIVE_SLACK_BYTES
    assert options["grpc.max_send_message_length"] == config.DEFAULT_MAX_MESSAGE_BYTES


def test_max_message_bytes_is_a_ceiling_on_the_receive_limit():
    loaded = config.load(parse("--max-record-bytes", "32768", "--max-message-bytes", "262144"), environ={})
    assert dict(grpc_options(loaded))["grpc.max_receive_message_length"] == 262144


def test_open_journals_are_lowered_to_what_the_fd_limit_fits_with_a_warning(caplog):
    loaded = config.load(parse(), environ={})
    bound = open_journal_bound(loaded, 1024)
    assert 0 < bound * FDS_PER_OPEN_JOURNAL < 1024 and bound < loaded.max_open_journals
    assert "does not fit the file-descriptor limit 1024" in caplog.text
    assert open_journal_bound(config.load(parse("--max-open-journals", "10"), environ={}), 1024) == 10
    jetstream = config.load(parse("--backend", "jetstream"), environ={})
    assert open_journal_bound(jetstream, 1024) == jetstream.max_open_journals  # no descriptor per run


def test_an_fd_limit_with_no_room_for_journals_refuses_to_start():
    with pytest.raises(ServerStartError, match="file-descriptor limit 100"):
        open_journal_bound(config.load(parse(), environ={}), 100)


def test_the_receive_window_is_fixed_so_refused_requests_cannot_be_pushed_in_bulk():
    options = dict(grpc_options(config.load(parse(), environ={})))
    assert options["grpc.http2.bdp_probe"] == 0
    assert options["grpc.http2.lookahead_bytes"] == RECEIVE_WINDOW_BYTES


def test_metrics_are_off_by_default_and_their_address_is_checked():
    assert config.load(parse(), environ={}).metrics_listen == ""
    assert config.load(parse(), environ={"RUNJOURNAL_METRICS_LISTEN": "0.0.0.0:9464"}).metrics_listen == "0.0.0.0:9464"
    with pytest.raises(config.ConfigError, match="--metrics-listen"):
        config.load(parse("--metrics-listen", "9464"), environ={})
