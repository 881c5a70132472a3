import pytest

import thicketdb


@pytest.fixture
def db(tmp_path):
    with thicketdb.DB(tmp_path / "db", write_buffer_size=1 << 20) as db:
        yield db
