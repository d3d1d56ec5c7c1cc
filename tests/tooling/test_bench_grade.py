"""make bench-grade writes its own section of docs/benchmarks.md and leaves the rest as it was."""

from instructor.bench_grade import (
    BEGIN,
    END,
    Case,
    Sample,
    cluster_ratios,
    comparison_table,
    compared,
    marked_section,
    median_of,
    run_against,
    section,
    table,
    write_section,
)


def test_the_section_is_appended_then_replaced_in_place(tmp_path):
    page = tmp_path / "benchmarks.md"
    page.write_text("# Benchmarks\n\nattention tables\n")
    write_section(page, [BEGIN, "first", END])
    write_section(page, [BEGIN, "second", END])
    text = page.read_text()
    assert text.startswith("# Benchmarks\n\nattention tables\n")
    assert "second" in text and "first" not in text
    assert text.count(BEGIN) == 1


def test_the_attention_benchmarks_can_keep_the_section(tmp_path):
    page = tmp_path / "benchmarks.md"
    page.write_text("old attention tables\n")
    write_section(page, [BEGIN, "grading costs", END])
    assert marked_section(page) == f"{BEGIN}\ngrading costs\n{END}\n"
    assert marked_section(tmp_path / "missing.md") == ""


def test_the_table_gives_ratios_to_import_torch_and_cpu_per_student():
    floor = (Case("import torch", ()), Sample(wall=1.0, cpu=1.0, peak_mib=100))
    batch = (Case("batch", (), per_student=4), Sample(wall=3.0, cpu=8.0, peak_mib=300))
    rows = table([floor, batch])
    assert rows[-1] == "| batch | 3.00 | 8.00 | 3.0x | 2.00 | 300 |"


def test_the_cluster_ratio_is_taken_per_pair_of_alternating_runs():
    jobs = [Sample(wall=50.0, cpu=1, peak_mib=1), Sample(wall=60.0, cpu=1, peak_mib=1)]
    dask = [Sample(wall=55.0, cpu=1, peak_mib=1), Sample(wall=63.0, cpu=1, peak_mib=1)]
    assert [round(ratio, 3) for ratio in cluster_ratios(jobs, dask)] == [1.1, 1.05]


def test_the_section_names_every_pairs_ratio_and_their_median():
    floor = (Case("import torch", ()), Sample(wall=1.0, cpu=1.0, peak_mib=100))
    text = "\n".join(section([floor], 3, 3, [1.1, 1.02, 1.05], 0.5, 0.6, "a cgroup"))
    assert "1.10x, 1.02x, 1.05x; median 1.05x wall time" in text
    assert "the large class 3 times each way, alternating" in text
    assert "LocalCluster" not in "\n".join(section([floor], 3, 3, [], 0.5, 0.6, "a cgroup"))


def test_a_median_sample_takes_each_figure_s_median():
    samples = [Sample(1.0, 5.0, 10), Sample(3.0, 1.0, 30), Sample(2.0, 3.0, 20)]
    assert median_of(samples) == Sample(2.0, 3.0, 20)


def test_a_comparison_gives_each_cases_change_and_fails_past_the_tolerance():
    case = Case("full grade", ())
    rows = compared([(case, [Sample(10.0, 20.0, 1)], [Sample(10.5, 23.0, 1)])])
    lines, within = comparison_table(rows, tolerance=0.10)
    assert lines[-1] == "| full grade | 10.00 -> 10.50 (+5%) | 20.00 -> 23.00 (+15%) |"
    assert not within
    assert comparison_table(rows, tolerance=0.20)[1]


def test_against_a_folder_that_is_no_checkout_is_refused_in_one_line(tmp_path, capsys):
    import argparse
    args = argparse.Namespace(against=str(tmp_path), runs=1, students=1, tolerance=0.1)
    assert run_against(args) == 2
    assert capsys.readouterr().err.count("\n") == 1
