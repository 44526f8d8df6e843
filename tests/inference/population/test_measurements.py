"""The table layout: round trip, and every refusal naming what is wrong (never a silent 0)."""

import numpy as np
import pandas as pd
import pytest

from dprisk.inference.population.measurements import (
    BlockMeasurements,
    cell_columns,
    read_noisy_table,
    write_noisy_table,
)

GEOIDS = np.array(["260010001001001", "260010001001002", "260030002002001"])


def _measurements(seed=3):
    rng = np.random.default_rng(seed)
    noisy = rng.integers(-30, 60, size=(GEOIDS.size, 2016))
    return BlockMeasurements(GEOIDS.copy(), noisy.astype(np.int64),
                             np.array([10.09, 10.09, 5.5]))


def _frame(m):
    cells = cell_columns()
    return pd.DataFrame({
        "geoid": np.repeat(m.geoids, 2016),
        **{k: np.tile(v, len(m.geoids)) for k, v in cells.items()},
        "noisy": m.noisy.reshape(-1),
        "variance": np.repeat(m.variance, 2016),
    })


def _write(frame, path):
    if str(path).endswith(".csv"):
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("ext", ["parquet", "csv"])
def test_round_trip(tmp_path, ext):
    m = _measurements()
    path = tmp_path / f"noisy.{ext}"
    write_noisy_table(path, m)
    back = read_noisy_table(path)
    assert list(back.geoids) == list(m.geoids)
    assert back.noisy.dtype == np.int64 and back.noisy.shape == (3, 2016)
    np.testing.assert_array_equal(back.noisy, m.noisy)
    np.testing.assert_array_equal(back.variance, m.variance)
    part = read_noisy_table(path, geoids=[GEOIDS[2], GEOIDS[0]])
    assert list(part.geoids) == [GEOIDS[0], GEOIDS[2]]
    np.testing.assert_array_equal(part.noisy, m.noisy[[0, 2]])
    given = read_noisy_table(path, noise_variance=7.25)
    np.testing.assert_array_equal(given.variance, [7.25] * 3)


def test_rows_in_any_order_and_cell_order_is_the_das_c_order(tmp_path):
    """A shuffled file reads the same; cell index ((h*2 + v)*2 + x)*63 + cenrace - 1."""
    m = _measurements()
    frame = _frame(m).sample(frac=1.0, random_state=1)
    back = read_noisy_table(_write(frame, tmp_path / "t.parquet"))
    np.testing.assert_array_equal(back.noisy, m.noisy)
    row = frame.iloc[0]
    cell = ((row.hhgq * 2 + row.votingage) * 2 + row.hispanic) * 63 + row.cenrace - 1
    block = list(back.geoids).index(row.geoid)
    assert back.noisy[block, cell] == row.noisy


@pytest.mark.parametrize("ext", ["parquet", "csv"])
def test_missing_cell_is_refused_naming_it(tmp_path, ext):
    frame = _frame(_measurements())
    # geoid 260010001001002, hhgq 3, votingage 1, hispanic 0, cenrace 5 -> cell 3*252+126+4
    drop = ((frame.geoid == GEOIDS[1]) & (frame.hhgq == 3) & (frame.votingage == 1)
            & (frame.hispanic == 0) & (frame.cenrace == 5))
    path = _write(frame[~drop], tmp_path / f"t.{ext}")
    with pytest.raises(ValueError, match=r"geoid 260010001001002 cell 886 \(hhgq=3, "
                       r"votingage=1, hispanic=0, cenrace=5\) is missing"):
        read_noisy_table(path)


def test_duplicated_cell_is_refused_naming_it(tmp_path):
    frame = _frame(_measurements())
    extra = frame[(frame.geoid == GEOIDS[2]) & (frame.hhgq == 7) & (frame.cenrace == 63)
                  & (frame.votingage == 0) & (frame.hispanic == 1)]
    path = _write(pd.concat([frame, extra]), tmp_path / "t.parquet")
    with pytest.raises(ValueError, match=r"geoid 260030002002001 cell 1889 \(hhgq=7, "
                       r"votingage=0, hispanic=1, cenrace=63\) appears more than once"):
        read_noisy_table(path)


def test_a_block_with_no_rows_is_refused_not_zero(tmp_path):
    m = _measurements()
    path = tmp_path / "t.parquet"
    write_noisy_table(path, m)
    with pytest.raises(ValueError, match="block 260099999999999 has no rows"):
        read_noisy_table(path, geoids=[GEOIDS[0], "260099999999999"])


@pytest.mark.parametrize(("change", "message"), [
    (lambda f: f.drop(columns="noisy"), "no column 'noisy'"),
    (lambda f: f.assign(noisy=f.noisy + 0.5), "column 'noisy' is double, not an integer"),
    (lambda f: f.assign(cenrace=f.cenrace.where(f.index != 5, 64)),
     "column 'cenrace' is 64 at row 6, outside 1-63"),
    (lambda f: f.assign(hhgq=f.hhgq.where(f.index != 2, -1)),
     "column 'hhgq' is -1 at row 3, outside 0-7"),
    (lambda f: f.assign(geoid=f.geoid.str.replace("260030002002001", "26003000200200")),
     "geoid '26003000200200' at row 4033 is not a 15-digit block GEOID"),
    (lambda f: f.assign(noisy=f.noisy.astype("Int64").where(f.index != 9, pd.NA)),
     "column 'noisy' is empty at row 10"),
    (lambda f: f.assign(variance=f.variance.where(f.geoid != GEOIDS[1], -1.0)),
     "variance of block 260010001001002 is -1.0, not a number > 0"),
    (lambda f: f.assign(variance=f.variance.where(f.index != 2017, 3.0)),
     "variance differs between the cells of block 260010001001002"),
    (lambda f: f.drop(columns="variance"), "no variance column"),
])
def test_bad_tables_are_refused_naming_the_problem(tmp_path, change, message):
    path = _write(change(_frame(_measurements())), tmp_path / "t.parquet")
    with pytest.raises(ValueError, match=message):
        read_noisy_table(path)


@pytest.mark.parametrize(("column", "row", "text", "kind"), [
    ("noisy", 7, "2.5", "an integer"), ("hhgq", 0, "abc", "an integer"),
    ("variance", 5000, "ten", "a number"), ("noisy", 6047, "1e3", "an integer")])
def test_a_csv_value_that_is_not_a_number_names_the_column_and_row(tmp_path, column, row,
                                                                     text, kind):
    """A CSV cell Arrow cannot convert was refused as 'cannot be read as the table layout
    (Error creating dataset. ... In CSV column #5: Row #9: CSV conversion error to int64:
    invalid value '2.5')': the column by its 0-based index, the row as the file's line (the
    header line 1), unlike every other refusal of the file (name, data rows from 1). Now
    'column 'noisy' is '2.5' at row 8, not an integer' (the last row too: 6047 + 1 = 6048)."""
    frame = _frame(_measurements()).astype({column: object})
    frame.loc[row, column] = text
    path = _write(frame, tmp_path / "t.csv")
    with pytest.raises(ValueError, match=f"^{path}: column '{column}' is '{text}' at row "
                                         f"{row + 1}, not {kind}$"):
        read_noisy_table(path)


@pytest.mark.parametrize("ext", ["parquet", "csv"])
def test_a_variance_of_whole_numbers_is_read(tmp_path, ext):
    """A Parquet table whose variance column pandas wrote as int64 (variance = 10) was refused,
    "column 'variance' is int64, not a number", while the same table as CSV was read."""
    m = _measurements()
    frame = _frame(BlockMeasurements(m.geoids, m.noisy, np.array([10.0, 10.0, 4.0])))
    frame["variance"] = frame["variance"].astype(np.int64)
    back = read_noisy_table(_write(frame, tmp_path / f"t.{ext}"))
    np.testing.assert_array_equal(back.noisy, m.noisy)
    assert back.variance.dtype == np.float64
    np.testing.assert_array_equal(back.variance, [10.0, 10.0, 4.0])


def test_not_parquet_or_csv_and_bad_variance_argument(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("x")
    with pytest.raises(ValueError, match="not a Parquet"):
        read_noisy_table(path)
    good = tmp_path / "t.parquet"
    write_noisy_table(good, _measurements())
    for bad in (0.0, -1.0, float("nan"), "3"):
        with pytest.raises(ValueError, match="noise_variance must be a number > 0"):
            read_noisy_table(good, noise_variance=bad)
    garbage = tmp_path / "g.parquet"
    garbage.write_bytes(b"not parquet at all")
    with pytest.raises(ValueError, match="cannot be read as the table layout"):
        read_noisy_table(garbage)


def _count_row_groups_read(module, monkeypatch) -> list:
    """A list that ``module._pruned`` appends the row groups it leaves to read to, each call."""
    read = []
    pruned = module._pruned

    def counting(dataset, low, high):
        out = pruned(dataset, low, high)
        read.append(sum(f.num_row_groups for f in out.get_fragments()))
        return out

    monkeypatch.setattr(module, "_pruned", counting)
    return read


def test_a_subset_reads_only_the_row_groups_that_can_hold_it(tmp_path, monkeypatch):
    """Written block by block (one row group each): reading two blocks reads the row groups
    whose geoid statistics overlap their range (2 of 3 here, not all), and gives the same
    numbers as the whole file."""
    import pyarrow.dataset as ds

    from dprisk.inference.population import measurements as module
    from dprisk.inference.population.measurements import NoisyTableWriter

    m = _measurements()
    path = tmp_path / "noisy.parquet"
    with NoisyTableWriter(path) as writer:
        for i in range(GEOIDS.size):
            writer.write(BlockMeasurements(m.geoids[i:i + 1], m.noisy[i:i + 1],
                                           m.variance[i:i + 1]))
    read = _count_row_groups_read(module, monkeypatch)
    part = read_noisy_table(path, geoids=[GEOIDS[1], GEOIDS[0]])
    assert read == [2] and ds.dataset(path).to_table().num_rows == 3 * 2016
    np.testing.assert_array_equal(part.noisy, m.noisy[[0, 1]])
    np.testing.assert_array_equal(part.variance, m.variance[[0, 1]])
    assert list(read_noisy_table(path, geoids=[GEOIDS[2]]).geoids) == [GEOIDS[2]]
    assert read == [2, 1]


@pytest.mark.parametrize("front", ["list and struct", "struct"])
def test_row_groups_are_pruned_by_the_geoid_leaf_behind_nested_columns(tmp_path, monkeypatch,
                                                                       front):
    """Nested columns before geoid have leaves of their own: the row groups are pruned by the
    statistics of geoid's leaf, not of the leaf at geoid's Arrow field index (here a struct's
    float: "object of type 'float' has no len()"; a struct's 15-digit text: every block "has
    no rows")."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dprisk.inference.population import measurements as module

    m = _measurements()
    table = pa.Table.from_pandas(_frame(m), preserve_index=False)
    rows = table.num_rows
    if front == "list and struct":  # leaves tags.list.element, meta.a, meta.b, then geoid
        table = table.add_column(0, "meta", pa.StructArray.from_arrays(
            [pa.array(np.arange(rows)), pa.array(np.full(rows, 0.5))], names=["a", "b"]))
        table = table.add_column(0, "tags", pa.array([[i % 5, 7] for i in range(rows)],
                                                     pa.list_(pa.int64())))
    else:  # leaves source.vintage, source.geoid2010, then geoid
        table = table.add_column(0, "source", pa.StructArray.from_arrays(
            [pa.array(np.full(rows, 2010)), pa.array(["999999999999999"] * rows)],
            names=["vintage", "geoid2010"]))
    path = tmp_path / "nested.parquet"
    pq.write_table(table, path, row_group_size=2016)  # one row group per block
    read = _count_row_groups_read(module, monkeypatch)
    part = read_noisy_table(path, geoids=[GEOIDS[1], GEOIDS[0]])
    assert read == [2]  # the pruning is kept: the third block's row group is not read
    assert list(part.geoids) == list(GEOIDS[:2])
    np.testing.assert_array_equal(part.noisy, m.noisy[:2])
    np.testing.assert_array_equal(read_noisy_table(path, geoids=[GEOIDS[2]]).noisy,
                                  m.noisy[2:])
    assert read == [2, 1]


def test_an_arrow_error_without_an_implementation_is_a_refusal_naming_the_file(tmp_path,
                                                                             monkeypatch):
    """Arrow's ArrowNotImplementedError (a NotImplementedError, not a ValueError) is refused
    as the file's other read errors are, naming the file; it used to escape as exit status 1.
    """
    import pyarrow as pa

    from dprisk.inference.population import measurements as module

    path = tmp_path / "t.parquet"
    write_noisy_table(path, _measurements())

    def no_cast(*args):
        raise pa.ArrowNotImplementedError("Unsupported cast from large_string to list")

    monkeypatch.setattr(module, "_dataset", no_cast)
    with pytest.raises(ValueError, match=f"{path}: cannot be read as the table layout "
                       r"\(Unsupported cast"):
        read_noisy_table(path)


def test_a_csv_header_not_in_utf8_is_refused_naming_the_file(tmp_path):
    """A Latin-1 byte in a column name used to escape as UnicodeDecodeError, not naming the
    file."""
    path = tmp_path / "latin.csv"
    write_noisy_table(path, _measurements())
    path.write_bytes(path.read_bytes().replace(b"noisy", b"no\xe9sy", 1))
    with pytest.raises(ValueError, match=rf"^{path}: cannot be read as the table layout \(text "
                       r"that is not UTF-8: b'no\\xe9sy'\)"):
        read_noisy_table(path)


@pytest.mark.parametrize("ext", ["parquet", "csv"])
def test_every_geoid_read_is_checked_not_only_those_asked_for(tmp_path, ext):
    """GEOIDs of 14 characters were refused as "block ... has no rows", and a malformed GEOID
    in a block not asked for was read without a word: the GEOIDs were checked after the rows
    of other blocks were dropped. Now every row read is checked, named by its file row."""
    frame = _frame(_measurements())
    short = _write(frame.assign(geoid=frame.geoid.str[1:]), tmp_path / f"short.{ext}")
    with pytest.raises(ValueError, match=f"{short}: geoid '60010001001001' at row 1 is not a "
                       "15-digit block GEOID"):
        read_noisy_table(short, geoids=GEOIDS[:1])
    extra = frame[frame.geoid == GEOIDS[0]].assign(geoid="2600300020020")
    other = _write(pd.concat([frame, extra]), tmp_path / f"other.{ext}")
    with pytest.raises(ValueError, match="geoid '2600300020020' at row 6049 is not a 15-digit"):
        read_noisy_table(other, geoids=GEOIDS[:2])
    width = _write(frame.assign(geoid=frame.geoid.where(frame.index != 2100,
                                                         "２60010001001002")),
                   tmp_path / f"width.{ext}")
    with pytest.raises(ValueError, match="geoid '２60010001001002' at row 2101 is not"):
        read_noisy_table(width, geoids=GEOIDS[:1])


def test_problems_name_the_file_row_when_row_groups_are_skipped_or_rows_dropped(tmp_path):
    """With geoids= the refusals counted the rows kept (here row 4), not the file's rows."""
    path = tmp_path / "t.parquet"
    frame = _frame(_measurements())
    frame.loc[2 * 2016 + 3, "cenrace"] = 64
    frame.loc[2016 + 5, "noisy"] = pd.NA
    frame["noisy"] = frame.noisy.astype("Int64")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path,
                   row_group_size=2016)
    with pytest.raises(ValueError, match="column 'cenrace' is 64 at row 4036, outside 1-63"):
        read_noisy_table(path, geoids=GEOIDS[2:])  # the first two row groups are skipped
    with pytest.raises(ValueError, match="column 'noisy' is empty at row 2022"):
        read_noisy_table(path, geoids=GEOIDS[1:2])
    with pytest.raises(ValueError, match="column 'noisy' is empty at row 2022"):
        read_noisy_table(path, geoids=GEOIDS[::2])  # the middle row group is read, not kept


def test_a_row_group_skipped_by_its_statistics_is_not_checked(tmp_path):
    """What the documentation states: a Parquet row group whose full-length GEOID statistics
    exclude every block asked for is not read, so a malformed GEOID between its minimum and
    maximum is seen only by a read that needs that row group."""
    m = _measurements()
    frame = _frame(m)
    frame.loc[2 * 2016 + 7, "geoid"] = "26003000200200x"  # between min and max of its group
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path,
                   row_group_size=2016)
    np.testing.assert_array_equal(read_noisy_table(path, geoids=GEOIDS[:2]).noisy, m.noisy[:2])
    with pytest.raises(ValueError, match="geoid '26003000200200x' at row 4040 is not"):
        read_noisy_table(path)


@pytest.mark.parametrize("statistics", [False, True])
def test_a_geoid_that_is_not_utf8_is_refused_naming_its_row(tmp_path, statistics):
    """Bytes that are not UTF-8 in a Parquet GEOID escaped as UnicodeDecodeError; written
    with statistics, the same bytes in the row group's maximum made the pruning fail."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pandas(_frame(_measurements()), preserve_index=False), path,
                   row_group_size=2016, write_statistics=statistics, compression="none",
                   use_dictionary=False)
    data = path.read_bytes()
    assert data.count(GEOIDS[2].encode()) >= 2016  # plain encoding: every row's bytes
    path.write_bytes(data.replace(GEOIDS[2].encode(), GEOIDS[2][:-1].encode() + b"\xe9"))
    for geoids in (None, GEOIDS[2:]):
        with pytest.raises(ValueError, match="geoid '26003000200200\ufffd' at row 4033 is not"):
            read_noisy_table(path, geoids=geoids)
