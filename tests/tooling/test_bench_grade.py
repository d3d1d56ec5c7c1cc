"""make bench-grade writes its own section of docs/benchmarks.md and leaves the rest as it was."""

from instructor.bench_grade import (
    BEGIN,
    END,
    Case,
    Sample,
    cluster_ratio,
    marked_section,
    runs_of,
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


def test_the_cluster_ratio_is_the_local_clusters_wall_over_jobs_2_on_the_large_class():
    jobs = (Case("batch --jobs 2, 40 students", (), per_student=40, large=True), Sample(wall=50.0, cpu=1, peak_mib=1))
    dask = (Case("batch --cluster local:2, 40 students", (), per_student=40, large=True),
            Sample(wall=55.0, cpu=1, peak_mib=1))
    assert cluster_ratio([jobs, dask]) == 1.1
    assert cluster_ratio([jobs]) is None


def test_the_large_class_runs_once_per_three_runs_of_the_other_cases():
    assert runs_of(Case("large", (), large=True), 3) == 1
    assert runs_of(Case("large", (), large=True), 1) == 1
    assert runs_of(Case("small", ()), 3) == 3
