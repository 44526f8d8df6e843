"""The released layout: written by the suite, read back lazily (the released files cannot be
reached from this machine: every file here is written in that layout by the suite or by hand).
"""

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from dprisk.inference.population.answers import query_answers, query_shape, query_specs
from dprisk.inference.population.geography import geocode_to_geoid, spine_codes
from dprisk.inference.population.measure import block_counts, measure
from dprisk.inference.population.measurements import read_noisy_table
from dprisk.inference.population.nmf_read import read_nmf_block_detailed
from dprisk.inference.population.noise import LevelNoise
from dprisk.models.census.histogram_2020 import query_cell_map
from dprisk.models.census.strategy import STRATEGY_QUERY_NAMES

PROD = "US_Person_PL_PROD"


def persons_of(states=("26",), n=400, seed=11):
    rng = np.random.default_rng(seed)
    blocks = [f"{s}{c:03d}{t:06d}{b:04d}" for s in states for c in (1, 5)
              for t in (100, 20201) for b in (1001, 1002, 2001)]
    return pd.DataFrame({
        "geoid": rng.choice(blocks, n), "hhgq": rng.integers(0, 8, n),
        "votingage": rng.integers(0, 2, n), "hispanic": rng.integers(0, 2, n),
        "cenrace": rng.integers(1, 64, n)})


def test_query_answers_equal_the_cell_maps():
    counts = np.random.default_rng(0).integers(0, 5, size=(3, 2016))
    answers = query_answers(counts, STRATEGY_QUERY_NAMES)
    for query in STRATEGY_QUERY_NAMES:
        cells, n_query = query_cell_map(query)
        expected = np.stack([np.bincount(cells, weights=row, minlength=n_query) for row in counts])
        np.testing.assert_array_equal(answers[query], expected.astype(np.int64))
        assert int(np.prod(query_shape(query))) == n_query
    assert query_shape("hhinstlevels") == (3, 1, 1, 1)
    assert query_shape("votingage * hispanic * cenrace") == (1, 2, 2, 63)
    assert query_specs("hispanic * cenrace") == ("*", "*", "hispanic", "cenrace")


def test_geocodes_nest_and_convert_back():
    geoids = np.array(["260010001001001", "260010001002005", "260050202011001"])
    codes = spine_codes(geoids, aian_tracts={"26005020201"})
    assert [len(codes.at(level)[0]) for level in ("State", "County", "Tract", "Block_Group",
                                                  "Block")] == [3, 9, 13, 15, 31]
    for child, parent in (("Block", "Block_Group"), ("Block_Group", "Tract"),
                          ("Tract", "County"), ("County", "State")):
        assert all(c.startswith(p) for c, p in zip(codes.at(child), codes.at(parent)))
    assert list(codes.state) == ["026", "026", "126"]
    assert codes.block[0][-16:] == "2600100010011001"  # state county tract bg-digit block
    assert list(geocode_to_geoid(codes.block)) == list(geoids)
    # A hand-made spine code (AIAN flag, state, county, tract, bg digit, block), as
    # sbaldasty/dpvalue's test fixture writes one: its tabulation block group is 500010001001.
    assert geocode_to_geoid(["050001000100" + "11001"])[0] == "500010001001001"
    with pytest.raises(ValueError, match="16-digit tabulation code"):
        geocode_to_geoid(["0500010001"])


def test_nmf_round_trip_equals_the_table_layout(tmp_path):
    persons = persons_of()
    (tmp_path / "t").mkdir()
    (tmp_path / "n").mkdir()
    measure(persons, tmp_path / "t", seed=42, layout="table")
    measure(persons, tmp_path / "n", seed=42, layout="nmf")
    table = read_noisy_table(tmp_path / "t" / "noisy.parquet")
    nmf = read_nmf_block_detailed(tmp_path / "n", "26")
    assert list(nmf.geoids) == list(table.geoids)
    np.testing.assert_array_equal(nmf.noisy, table.noisy)
    np.testing.assert_allclose(nmf.variance, 10.092848, rtol=1e-6)
    some = read_nmf_block_detailed(tmp_path / "n", "26", geoids=table.geoids[[4, 1]])
    np.testing.assert_array_equal(some.noisy, table.noisy[[1, 4]])
    with pytest.raises(ValueError, match="block 260019999999999 has no detailed_dpq row"):
        read_nmf_block_detailed(tmp_path / "n", "26", geoids=["260019999999999"])


def test_every_level_and_query_holds_answer_plus_its_noise(tmp_path):
    """value - (the noise of (seed, level, query, geocode)) = the true answer, everywhere."""
    persons = persons_of(n=150)
    measure(persons, tmp_path, seed=5, layout="nmf")
    geoids, block_index, cell = block_counts(persons)
    counts = np.zeros((geoids.size, 2016), np.int64)
    np.add.at(counts, (block_index, cell), 1)
    codes = spine_codes(geoids)
    for level in ("US", "State", "County", "Tract", "Block_Group", "Block"):
        folder = tmp_path / PROD / f"{level}.parquet" / "DPQuery"
        rows = ds.dataset(folder, format="parquet", partitioning="hive").to_table().to_pandas()
        expected = [f"{q}_dpq" for q in STRATEGY_QUERY_NAMES if level != "US" or q != "total"]
        assert sorted(set(rows.query_name)) == sorted(expected)
        keys = [""] * geoids.size if level == "US" else list(codes.at(level))
        units = sorted(set(keys))
        assert sorted(set(rows.geocode)) == units
        truth = {u: counts[np.asarray(keys) == u].sum(axis=0) for u in units}
        noise = LevelNoise(level, 5)
        drawn = noise.draw(units)
        for row in rows.itertuples():
            query = row.query_name[:-4]
            cells, n_query = query_cell_map(query)
            answer = np.bincount(cells, weights=truth[row.geocode], minlength=n_query)
            got = np.asarray(row.value) - drawn[query][units.index(row.geocode)]
            np.testing.assert_array_equal(got, answer)
            assert list(row.query_shape) == list(query_shape(query))
            assert (row.hhgq, row.votingage, row.hispanic, row.cenrace) == query_specs(query)
            assert row.variance == pytest.approx(noise.variance(query), rel=1e-12)
        constraints = pq.read_table(tmp_path / PROD / f"{level}.parquet" / "Constraint").to_pandas()
        assert set(constraints.sign) <= {"=", "<=", ">="}
        assert ("total_con" in set(constraints.query_name)) == (level == "US")


def test_schema_drift_between_partitions_is_unified(tmp_path):
    """State=026 is written int64 with a null sign column; State=126 (AIAN) int32, no sign."""
    persons = persons_of(n=300)
    measure(persons, tmp_path, seed=9, layout="nmf", aian_tracts={"26005020201"})
    block = tmp_path / PROD / "Block.parquet" / "DPQuery"
    wide = pq.read_schema(next((block / "State=026").glob("*.parquet")))
    narrow = pq.read_schema(next((block / "State=126").glob("*.parquet")))
    assert wide.field("value").type == pa.list_(pa.int64()) and "sign" in wide.names
    assert narrow.field("value").type == pa.list_(pa.int32()) and "sign" not in narrow.names
    measurements = read_nmf_block_detailed(tmp_path, "26")
    (tmp_path / "t").mkdir()
    measure(persons, tmp_path / "t", seed=9, layout="table")
    table = read_noisy_table(tmp_path / "t" / "noisy.parquet")
    assert list(measurements.geoids) == list(table.geoids)
    np.testing.assert_array_equal(measurements.noisy, table.noisy)
    asked = read_nmf_block_detailed(tmp_path, "26", geoids=table.geoids)  # by row group
    np.testing.assert_array_equal(asked.noisy, table.noisy)


def test_only_the_requested_state_is_opened(tmp_path):
    persons = persons_of(states=("26", "27"), n=300)
    measure(persons, tmp_path, seed=1, layout="nmf")
    corrupt = next((tmp_path / PROD / "Block.parquet" / "DPQuery" / "State=027").glob("*"))
    corrupt.write_bytes(b"PAR1 this is not a parquet file")
    good = read_nmf_block_detailed(tmp_path, "26")
    assert all(g.startswith("26") for g in good.geoids) and len(good.geoids) == 12
    with pytest.raises(ValueError, match="state 27"):
        read_nmf_block_detailed(tmp_path, "27")
    with pytest.raises(ValueError, match="state 06: no partition State=006 or State=106"):
        read_nmf_block_detailed(tmp_path, "06")
    with pytest.raises(ValueError, match="two-digit FIPS"):
        read_nmf_block_detailed(tmp_path, "6")


def test_a_hand_written_partition_in_the_released_shape(tmp_path):
    """Written by hand, as dpvalue's test fixture does: int32 lists, float32 variance, no sign.

    value = 0..2015 checks the flattening: cell ((h*2 + v)*2 + x)*63 + c holds its own index.
    """
    folder = tmp_path / PROD / "Block.parquet" / "DPQuery" / "State=050"
    folder.mkdir(parents=True)
    geocode = "050" + "001000" + "0001" + "01" + "5000100010011001"
    table = pa.table({
        "geocode": [geocode, geocode],
        "query_name": ["total_dpq", "detailed_dpq"],
        "hhgq": ["*", "detailed"], "votingage": ["*", "detailed"],
        "hispanic": ["*", "detailed"], "cenrace": ["*", "detailed"],
        "query_shape": pa.array([[1, 1, 1, 1], [8, 2, 2, 63]], pa.list_(pa.int32())),
        "value": pa.array([[9], list(range(2016))], pa.list_(pa.int32())),
        "variance": pa.array([100.0, 10.09], pa.float32()),
        "plb": ["1/4097", "3945/4097"],
    })
    pq.write_table(table, folder / "part-00000-anyname.snappy.parquet")
    read = read_nmf_block_detailed(tmp_path, "50")
    assert list(read.geoids) == ["500010001001001"]
    np.testing.assert_array_equal(read.noisy[0], np.arange(2016))
    assert read.variance[0] == pytest.approx(10.09, rel=1e-6)


def test_puerto_rico_goes_to_its_own_product_without_a_us_level(tmp_path):
    persons = pd.concat([persons_of(states=("72",), n=40), persons_of(states=("01",), n=40)])
    measure(persons, tmp_path, seed=2, layout="nmf")
    assert not (tmp_path / "PR_Person_PL_PROD" / "US.parquet").exists()
    us = pq.read_table(tmp_path / PROD / "US.parquet" / "DPQuery").to_pandas()
    total = us[us.query_name == "votingage_dpq"].value.iloc[0]
    noise = LevelNoise("US", 2).draw([""], ["votingage"])["votingage"][0]
    assert int(np.sum(np.asarray(total) - noise)) == 40  # the states' persons, not PR's
    pr = read_nmf_block_detailed(tmp_path, "72")
    assert all(g.startswith("72") for g in pr.geoids)


@pytest.mark.parametrize(("column", "data", "kind"), [
    ("value", pa.array(["[1, 2]", "0 1 2"], pa.large_string()), "a list of integers"),
    ("variance", pa.array([{"sigma2": 100.0}, {"sigma2": 10.09}]), "a number"),
])
def test_a_column_arrow_cannot_cast_is_refused_naming_the_file(tmp_path, column, data, kind):
    """Text where ``value`` holds a list (or a struct as ``variance``) has no cast in Arrow:
    the reader failed with ArrowNotImplementedError (exit status 1); now a ValueError
    naming the file, the column and what it must hold."""
    folder = tmp_path / PROD / "Block.parquet" / "DPQuery" / "State=050"
    folder.mkdir(parents=True)
    geocode = "050" + "001000" + "0001" + "01" + "5000100010011001"
    table = pa.table({
        "geocode": [geocode, geocode], "query_name": ["total_dpq", "detailed_dpq"],
        "query_shape": pa.array([[1, 1, 1, 1], [8, 2, 2, 63]], pa.list_(pa.int32())),
        "value": pa.array([[9], list(range(2016))], pa.list_(pa.int32())),
        "variance": pa.array([100.0, 10.09]),
    })
    table = table.set_column(table.schema.get_field_index(column), column, data)
    path = folder / "part-0.parquet"
    pq.write_table(table, path)
    with pytest.raises(ValueError, match=f"{path}: column '{column}' is .*, not {kind}$"):
        read_nmf_block_detailed(tmp_path, "50")


@pytest.mark.parametrize("where", ["column name", "geocode"])
def test_text_that_is_not_utf8_is_refused_naming_the_state_or_the_file(tmp_path, where):
    """A byte that is not UTF-8 in a column name or a geocode escaped as UnicodeDecodeError
    ('utf-8' codec can't decode ...), naming neither the state nor the file."""
    folder = tmp_path / PROD / "Block.parquet" / "DPQuery" / "State=050"
    folder.mkdir(parents=True)
    geocode = "050" + "001000" + "0001" + "01" + "5000100010011001"
    table = pa.table({
        "geocode": [geocode], "query_name": ["detailed_dpq"],
        "query_shape": pa.array([[8, 2, 2, 63]], pa.list_(pa.int32())),
        "value": pa.array([list(range(2016))], pa.list_(pa.int32())),
        "variance": pa.array([10.09]), "plbxyz": ["1/2"],
    })
    path = folder / "part-0.parquet"
    pq.write_table(table, path, compression="none", use_dictionary=False,
                   write_statistics=False)
    old, new = ((b"plbxyz", b"pl\xe9xyz") if where == "column name"
                else (geocode.encode(), geocode[:-1].encode() + b"\xe9"))
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new))
    message = (f"{path}: a column name is not UTF-8 text" if where == "column name"
               else "state 50: the block detailed_dpq rows cannot be read \\(text that is not "
               "UTF-8")
    with pytest.raises(ValueError, match=message):
        read_nmf_block_detailed(tmp_path, "50")


def test_a_null_in_a_detailed_value_is_refused_naming_the_block_and_cell(tmp_path):
    """A null entry inside a block's ``value`` list was refused as 'the block detailed_dpq
    rows cannot be read (Needed to copy 1 chunks with 1 nulls, but zero_copy_only was True)',
    naming neither the block nor the cell; it is never read as 0."""
    folder = tmp_path / PROD / "Block.parquet" / "DPQuery" / "State=050"
    folder.mkdir(parents=True)
    codes = ["050" + "001000" + "0001" + "01" + f"500010001001100{b}" for b in (1, 2)]
    holed = list(range(2016))
    holed[886] = None
    table = pa.table({
        "geocode": codes, "query_name": ["detailed_dpq", "detailed_dpq"],
        "query_shape": pa.array([[8, 2, 2, 63]] * 2, pa.list_(pa.int32())),
        "value": pa.array([list(range(2016)), holed], pa.list_(pa.int32())),
        "variance": pa.array([10.09, 10.09]),
    })
    pq.write_table(table, folder / "part-0.parquet")
    with pytest.raises(ValueError, match=f"block {codes[1]}: detailed_dpq value holds an "
                                         "empty entry \\(null\\) at cell 886, not a number"):
        read_nmf_block_detailed(tmp_path, "50")
    assert list(read_nmf_block_detailed(tmp_path, "50", geoids=["500010001001001"]).geoids) \
        == ["500010001001001"]


@pytest.mark.parametrize("column", ["geocode", "query_name", "query_shape", "value", "variance"])
def test_a_file_without_a_read_column_is_refused_naming_the_file_and_column(tmp_path, column):
    """A DPQuery file lacking a column was read as if that column held nulls (the reader
    lets ``sign`` be absent): no ``variance`` was refused as 'block ... has variance nan', no
    ``value`` as 'value holds 0 numbers', no ``query_name`` as 'block ... has no detailed_dpq
    row', naming neither the file nor the column; now the file and the column are named."""
    folder = tmp_path / PROD / "Block.parquet" / "DPQuery" / "State=050"
    folder.mkdir(parents=True)
    geocode = "050" + "001000" + "0001" + "01" + "5000100010011001"
    table = pa.table({
        "geocode": [geocode], "query_name": ["detailed_dpq"],
        "query_shape": pa.array([[8, 2, 2, 63]], pa.list_(pa.int32())),
        "value": pa.array([list(range(2016))], pa.list_(pa.int32())),
        "variance": pa.array([10.09]),
    })
    path = folder / "part-0.parquet"
    pq.write_table(table, path)
    assert list(read_nmf_block_detailed(tmp_path, "50").geoids) == ["500010001001001"]
    pq.write_table(table.drop_columns([column]), path)
    with pytest.raises(ValueError, match=f"^{path}: no column '{column}' \\(a DPQuery file"):
        read_nmf_block_detailed(tmp_path, "50")


def test_a_value_arrow_cannot_cast_without_loss_is_refused_naming_the_file(tmp_path):
    """A ``value`` list of doubles casts to integers while each is whole (read as before), but
    17.5 failed in the scan as 'state 50: the block detailed_dpq rows cannot be read (Float
    value 17.500000 was truncated converting to int64)', naming neither the file nor the
    column; now both."""
    folder = tmp_path / PROD / "Block.parquet" / "DPQuery" / "State=050"
    folder.mkdir(parents=True)
    geocode = "050" + "001000" + "0001" + "01" + "5000100010011001"
    whole = [float(v) for v in range(2016)]
    path = folder / "part-0.parquet"

    def write(values):
        pq.write_table(pa.table({
            "geocode": [geocode], "query_name": ["detailed_dpq"],
            "query_shape": pa.array([[8, 2, 2, 63]], pa.list_(pa.int32())),
            "value": pa.array([values], pa.list_(pa.float64())),
            "variance": pa.array([10.09]),
        }), path)

    write(whole)
    assert read_nmf_block_detailed(tmp_path, "50").noisy[0, 886] == 886
    write([*whole[:886], 17.5, *whole[887:]])
    with pytest.raises(ValueError, match=f"^{path}: column 'value' holds a value that is not a "
                                         "list of integers \\(Float value 17.5"):
        read_nmf_block_detailed(tmp_path, "50")


def test_a_partition_decodes_only_the_row_groups_holding_its_blocks(tmp_path):
    """Each partition of 'population risk --nmf' reads its own blocks, but the reader
    decoded the value lists of every block of the state to keep a few: 3 blocks of a
    60,000-block state took 3.9 s of CPU and peaked at 1.4 GB (a run whose memory check
    estimated 480 kB). Now a row group's value lists are decoded only where its geocodes
    hold a wanted block. Here 40 row groups of 25 blocks (16.1 MB of int64 cells): Arrow
    allocated 23.1 MB in all reading one block before the fix (every row group decoded),
    0.81 MB after (one row group's 0.4 MB of cells and its geocodes); the bound, 4 MB, is
    ten row groups' cells."""
    folder = tmp_path / PROD / "Block.parquet" / "DPQuery" / "State=050"
    folder.mkdir(parents=True)
    codes = ["050" + "001000" + f"{t:04d}" + "01" + f"50001{t:06d}1{1000 + b}"
             for t in range(40) for b in range(25)]
    values = np.arange(len(codes) * 2016, dtype=np.int64).reshape(len(codes), 2016) % 37 - 18
    # each row group's 25 value lists from their flat cells and offsets (the same list<int32>
    # column as pa.array of 25 arrays, which converted them cell by cell: half the test's CPU)
    offsets = pa.array(np.arange(0, 25 * 2016 + 1, 2016, dtype=np.int32))
    with pq.ParquetWriter(folder / "part-0.parquet", pa.schema([
            ("geocode", pa.string()), ("query_name", pa.string()),
            ("query_shape", pa.list_(pa.int32())), ("value", pa.list_(pa.int32())),
            ("variance", pa.float64())])) as writer:
        for t in range(40):
            rows = slice(25 * t, 25 * t + 25)
            writer.write_table(pa.table({
                "geocode": codes[rows], "query_name": ["detailed_dpq"] * 25,
                "query_shape": pa.array([[8, 2, 2, 63]] * 25, pa.list_(pa.int32())),
                "value": pa.ListArray.from_arrays(offsets, values[rows].astype(np.int32).ravel()),
                "variance": [10.09] * 25}))
    wanted = geocode_to_geoid([codes[517]])
    pool = pa.proxy_memory_pool(pa.default_memory_pool())
    default = pa.default_memory_pool()
    pa.set_memory_pool(pool)
    try:
        read = read_nmf_block_detailed(tmp_path, "50", geoids=wanted)
    finally:
        pa.set_memory_pool(default)
    assert list(read.geoids) == list(wanted)
    np.testing.assert_array_equal(read.noisy[0], values[517])
    assert pool.total_bytes_allocated() < 4 * 2**20
    whole = read_nmf_block_detailed(tmp_path, "50")  # every row is still read without geoids
    np.testing.assert_array_equal(whole.noisy, values[np.argsort(geocode_to_geoid(codes))])
