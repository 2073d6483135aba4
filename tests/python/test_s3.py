"""S3 from Python, against versitygw (an S3 server on loopback, as the Go
S3 suite uses): credentials and the endpoint set in os.environ after the
library was loaded reach the engine; storage_options work without them."""

import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

import kv0
import kv0.tracking as tracking
from conftest import in_ci

VERSITYGW = "github.com/versity/versitygw/cmd/versitygw@v1.8.0"
BUCKET = "kv0-pytest"
ACCESS, SECRET = "kv0pyaccess", "kv0pysecret0123456789"


def _gobin():
    """The folder make s3-deps installs versitygw into."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "kv0", "tools", "versitygw-v1.8.0")


def _binary():
    p = shutil.which("versitygw")
    if p:
        return p
    gobin = _gobin()
    binary = os.path.join(gobin, "versitygw")
    if os.path.exists(binary):
        return binary
    go = shutil.which("go")
    if go is None or in_ci():
        return None  # make s3-deps installs it, a step of its own before the suites (make test)
    env = dict(os.environ, GOBIN=gobin, GOFLAGS="-mod=mod", GOWORK="off")
    p = subprocess.run([go, "install", VERSITYGW], cwd=tempfile.gettempdir(), env=env, capture_output=True, text=True,
                       timeout=600)
    return binary if p.returncode == 0 else None


@pytest.fixture(scope="module")
def s3_endpoint(tmp_path_factory):
    binary = _binary()
    if binary is None:
        if in_ci():
            pytest.fail(f"CI=true but versitygw is not installed (make s3-deps installs it in {_gobin()})")
        pytest.skip("versitygw not available")
    data = tmp_path_factory.mktemp("versitygw")
    (data / BUCKET).mkdir()  # the posix backend serves each folder as a bucket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    addr = f"127.0.0.1:{port}"
    log = open(data.parent / "versitygw.log", "w")
    proc = subprocess.Popen([binary, "--port", addr, "posix", str(data)], stdout=log, stderr=log,
                            env=dict(os.environ, ROOT_ACCESS_KEY=ACCESS, ROOT_SECRET_KEY=SECRET))
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail(f"versitygw exited with {proc.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("versitygw did not listen within 30 s")
                time.sleep(0.05)
        yield "http://" + addr
    finally:
        proc.kill()
        proc.wait()
        log.close()


def _clear_aws(monkeypatch):
    for k in list(os.environ):
        if k.startswith("AWS_") or k.startswith("KV0_S3_"):
            monkeypatch.delenv(k)


def test_s3_through_environment(s3_endpoint, monkeypatch):
    _clear_aws(monkeypatch)
    # Set after kv0 (and the Go runtime) were loaded: each open passes them.
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("KV0_S3_PATH_STYLE", "1")
    monkeypatch.setenv("KV0_S3_ALLOW_HTTP", "1")
    uri = f"s3://{BUCKET}/env-{os.getpid()}/kv.lance"
    with kv0.DB(uri) as db:
        for i in range(50):
            db.put(b"k%02d" % i, b"v%d" % i)
        db.flush()
    with kv0.DB(uri, read_only=True) as db:
        it = db.iteritems()
        it.seek_to_first()
        assert list(it) == [(b"k%02d" % i, b"v%d" % i) for i in range(50)]
    repo_uri = f"s3://{BUCKET}/env-{os.getpid()}/repo"
    with tracking.Repo(repo_uri) as repo:
        with repo.start_run(name="s3") as run:
            run.track_many("loss", [1.0, 0.5, 0.25])
    with tracking.Repo(repo_uri, read_only=True) as repo:
        (r,) = repo.runs()
        (s,) = repo.all_series(r["run_id"])
        assert list(repo.read_many([s["series_id"]])[0]["values"]) == [1.0, 0.5, 0.25]
    # Without the secret in the environment the same open fails: the
    # engine follows os.environ as it is now.
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    with pytest.raises(kv0.errors.Error):
        kv0.DB(uri, read_only=True)


def test_s3_storage_options(s3_endpoint, monkeypatch):
    _clear_aws(monkeypatch)
    so = {"aws_endpoint": s3_endpoint, "aws_access_key_id": ACCESS, "aws_secret_access_key": SECRET,
          "aws_region": "us-east-1", "allow_http": "true", "aws_virtual_hosted_style_request": "false"}
    uri = f"s3://{BUCKET}/so-{os.getpid()}/kv.lance"
    with kv0.DB(uri, storage_options=so) as db:
        db.put(b"k", b"v", sync=True)
    with kv0.DB(uri, kv0.Options(storage_options=so), read_only=True) as db:
        assert db.get(b"k") == b"v"
