"""The sentences that audits found false on committed report pages, and what replaces them (issue 38): the data of
:func:`shc.reports.corrections.correct_pages`, which applies them.

Each :class:`Correction` names its page (the notebook's stem), the words as the page shows them, today's words, why
the old ones are false, and optionally the finding it adds, the published table cell it fixes (``table``) or the pages
it is limited to (``when``, a test of the page's folder)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CORRECTIONS", "Correction"]


@dataclass(frozen=True)
class Correction:
    """A sentence of an earlier notebook that an audit found false, and what replaces it on the pages built before.

    ``old`` and ``new`` are the text as a page shows it (the rendered Markdown: TeX stays as written, code spans are
    ``<code>``); ``old`` is matched word by word, whatever the line breaks, in the page's body. ``why`` ends the note
    under the paragraph ("... which <why>"); a note under a list item goes under the list, one under a heading under
    the heading, and words corrected in the page's ``<h1>`` are corrected in its ``<title>``, its ``run.json``'s
    title and the index's link to it too. Where ``new`` points to a computed finding, ``finding`` names it with its
    ``tables`` (paths in the page folder) and ``after_cell``, the notebook cell id whose output it follows.

    ``table`` (a path in the page folder, ``tables/x.csv``, whatever its compression: ``.csv.xz``, ``.csv.gz``) makes
    ``old`` a whole cell of that published table: the cell is replaced in the file and in the page's HTML table that
    shows it, the note goes under that table, and the page's ``run.json`` records the file under
    ``corrected_after_build``. ``when``, a test of the page's folder, limits the correction to the pages whose runs
    make the old words false (a title that promises nine baselines is true on a set that runs all nine)."""

    page: str
    old: str
    new: str
    why: str
    finding: str | None = None
    tables: Mapping[str, str] = field(default_factory=dict)
    after_cell: str | None = None
    table: str | None = None
    when: Callable[[Path], bool] | None = None

    def __post_init__(self) -> None:
        if (self.finding is None) != (self.after_cell is None) or (self.finding is not None and not self.tables):
            raise ValueError(f"correction of {self.page}: a finding needs its tables and the cell it follows, and "
                             "those need a finding.")
        if self.table is not None and self.finding is not None:
            raise ValueError(f"correction of {self.page}: a table cell's correction adds no finding.")
        if self.pattern.search(self.new):  # a page corrected once would be corrected again at every run
            raise ValueError(f"correction of {self.page}: its new words contain the old ones ({self.old!r}); reword "
                             "them so that a corrected page no longer matches.")

    @property
    def pattern(self) -> re.Pattern:
        words = r"\s+".join(re.escape(word) for word in self.old.split())
        return re.compile(rf"(<td[^>]*>)\s*{words}\s*(</td>)" if self.table else words)

    def applies(self, page_dir: Path) -> bool:
        """Whether the old words are false on the page in ``page_dir`` (always, unless ``when`` says)."""
        return self.when is None or self.when(page_dir)


def _fewer_paper_baselines(page_dir: Path) -> bool:
    """Whether the page's runs (its ``run.json``'s methods) leave out some of the paper's nine baselines."""
    from shc.paper import PAPER_BASELINES

    record_file = page_dir / "run.json"
    if not record_file.is_file():
        return False
    methods = (json.loads(record_file.read_text(encoding="utf-8")).get("parameters") or {}).get("methods") or ()
    return not set(PAPER_BASELINES) <= set(methods)


def _without_page_05(page_dir: Path) -> bool:
    """Whether the page's report set builds no page 05 (the ablations)."""
    return not any(page_dir.parent.glob("05_*/*-report.html"))


def _unseen_preset(page_dir: Path) -> bool:
    """Whether the page's preset (its ``run.json``'s) holds classes out: an unseen one (``*-unseen``)."""
    record_file = page_dir / "run.json"
    if not record_file.is_file():
        return False
    record = json.loads(record_file.read_text(encoding="utf-8"))
    return str((record.get("parameters") or {}).get("preset") or "").endswith("-unseen")


def _unseen_selected_the_old_way(page_dir: Path) -> bool:
    """Whether the page holds classes out and its runs were trained before 2026-12-02, when stage 3's model selection
    still ranked against the whole database and a classifier's test accuracy counted the held-out queries as errors
    (docs/unseen.md): its ``run.json``'s preset is an unseen one and its build is older."""
    record_file = page_dir / "run.json"
    if not record_file.is_file():
        return False
    record = json.loads(record_file.read_text(encoding="utf-8"))
    preset = str((record.get("parameters") or {}).get("preset") or "")
    return preset.endswith("-unseen") and str(record.get("started") or record.get("finished") or "") < "2026-12-02"


#: Why the old descriptions of shc-ls are false: it drops Eq. 22's spreading term.
_SHC_LS = ("the code contradicts (shc.centers.search): shc-ls minimises SHC's semantic loss under its distance "
           "constraint without Eq. 22's spreading term (mu = 0)")


#: The false sentences of earlier notebooks (the audits of 2026-11-29, docs/reports.md), in the words the pages show.
CORRECTIONS: tuple[Correction, ...] = (
    Correction(
        "01_similarity",
        old="Every row is centred (Eq. 8-9), so roughly half of each row is negative: \"less similar than this "
            "class's average\".",
        new="Every row is centred on its mean (Eq. 8-9) before the matrix is symmetrised, so a negative entry reads "
            "\"less similar than these classes' average\"; a class's few confusable classes pull its mean up, so most "
            "of a row can be negative (the line under the heatmap gives the share).",
        why="the share of negative entries in the heatmap's own data contradicts",
        finding="similarity-signs", tables={"S": "figures/similarity_heatmap.csv.gz"}, after_cell="0d8e9dab"),
    Correction(
        "00_center_geometry",
        old="Distance-only centers give a flat, noisy $\\mathbf{H}\\mathbf{H}^\\top/q$ (cosines near 0 everywhere);",
        new="Distance-only centers give an $\\mathbf{H}\\mathbf{H}^\\top/q$ without the blocks of $\\mathbf{S}$ (its "
            "cosines do not follow the classes; CSQ's negated Hadamard rows sit at $-1$ from their own row);",
        why="the page's own Gram matrices contradict (CSQ's negated rows sit at -1)"),
    Correction(
        "02_hash_centers",
        old="the semantic-only ablation reaches a comparable $S_{loss}$ but gives up",
        new="the semantic-only ablation is free to fit $\\mathbf{S}$ more closely (compare its $S_{loss}$ with SHC's "
            "in the table) but gives up",
        why="the page's table contradicts (its S_loss is well below SHC's)"),
    Correction(
        "02_hash_centers",
        old="\\tfrac{1}{q}\\mathbf{H}^\\top\\mathbf{H}\\|_F^2",
        new="\\tfrac{1}{q}\\mathbf{H}\\mathbf{H}^\\top\\|_F^2",
        why="wrote the paper's H^T H (its centers are columns) for this page's centers, which are rows"),
    Correction(
        "03_train_hashing",
        old="the losses of different methods are on scales up to 100x apart (CRH's cross-entropy against CSQ's BCE), "
            "so the panel compares their shapes",
        new="the losses of different methods are on different scales (each method's loss has its own terms and "
            "weights), so the panel compares their shapes",
        why="states a ratio the page does not show"),
    Correction(
        "06_baselines",
        old="Center-Reassigned Hashing (AAAI 2026, by the SHC authors' group)",
        new="Center-Reassigned Hashing (AAAI 2026; Yin et al.)",
        why="claims an authorship link that no file of the project supports"),
    Correction(  # an older wording of the same claim (the sets built before methods' tags were shared)
        "06_baselines",
        old="Center Reassignment Hashing (AAAI 2026, by the SHC authors' group)",
        new="Center-Reassigned Hashing (Yin et al.)",
        why="claims an authorship link that no file of the project supports"),
    # a reader audit of the notebooks' prose (2026-12-02): section numbers of another numbering, and sentences that
    # say what the page's code does not do
    Correction(
        "04_retrieval",
        old="a result counts as relevant when it shares the query's class (Sec. 5.2).",
        new="a result counts as relevant when it shares the query's class (Sec. 4.2).",
        why="cites a section the paper does not have (Evaluation Measures is Sec. 4.2)"),
    Correction(
        "05_ablations",
        old="The paper's Sec. 5.6 asks what each part of SHC contributes:",
        new="The paper's Sec. 4.6 asks what each part of SHC contributes:",
        why="cites a section the paper does not have (Ablation Studies is Sec. 4.6)"),
    Correction(
        "06_baselines",
        old="(Sec. 5.1.3, Tables 4-6).",
        new="(Sec. 4.3; its results in Sec. 4.5.3, Tables 4-6).",
        why="cites a section the paper does not have (Baseline Approaches is Sec. 4.3)"),
    Correction(
        "06_baselines",
        old="(the own class's center, or for methods without centers the class's majority code, is the nearest; ties "
            "count fractionally)",
        new="(the own class's target is the nearest: each method's centers, the class codes it learned (CRH), or, "
            "for methods with neither, the class's majority code; ties count fractionally)",
        why="said CRH is measured against majority codes; it is measured against the class codes it learned"),
    Correction(
        "00_center_geometry",
        old="(CSQ's fallback): independent fair coin flips per bit;",
        new="(CSQ's random-center variant): independent fair coin flips per bit;",
        why="named CSQ's fallback, which draws balanced rows (q/2 bits of each sign), not coin flips"),
    Correction(
        "00_center_geometry",
        old="comparisons between methods use the paired differences by seed with a 95% t-interval.",
        new="this page draws one center set per method, so its differences between methods have no interval (page "
            "02 has them, over seeds).",
        why="promises intervals this page cannot draw (one center set per method)"),
    Correction(
        "01_similarity",
        old="This notebook trains that classifier (the paper's Table 2 reports its accuracy),",
        new="This notebook reads that classifier (trained by <code>python -m shc.reports</code> or "
            "<code>shc.pipeline</code>; the paper's Table 2 reports its accuracy),",
        why="said the page trains the classifier; it reads the runs computed before it"),
    Correction(
        "01_similarity",
        old="comparisons between methods use the paired differences by seed with a 95% t-interval.",
        new="this page compares sources of $\\mathbf{S}$, not methods, so no interval between methods is drawn here.",
        why="promises intervals between methods on a page that compares none"),
    # a reader audit of standard's pages 00 and 02 (2026-12-03): sentences the notebooks have since corrected
    Correction(
        "02_hash_centers",
        old="Random and CSQ centers carry no distance guarantee once $C &gt; 2q$.",
        new="Random centers carry no distance guarantee at any $C$, CSQ's none once $C &gt; 2q$.",
        why="the page's own 64-bit row contradicts (random centers fall below the GV d at C <= 2q)"),
    Correction(
        "02_hash_centers",
        old="Distance-only centers give a flat, noisy picture; semantic centers reproduce the blocks of "
            "$\\mathbf{S}$.",
        new="How closely each method's cosines follow $\\mathbf{S}$ is the Spearman column of the center-quality "
            "table (Section 1): near 0 for centers that ignore it.",
        why="the figure's own data contradicts (CSQ's negated Hadamard rows sit at -1)"),
    Correction(
        "00_center_geometry",
        old="which Hadamard centers reach only for $C \\le 2q$ (dashed).",
        new="which Hadamard centers reach only for $C \\le 2q$ (dashed, left panel).",
        why="placed the dashed Hadamard segments in the right panel, which has none"),
    Correction(
        "00_center_geometry",
        old="What happens to $d_{\\min}$ and $S_{loss}$ if you add classes, shorten the code, or switch from MDS to "
            "SHC centers? Which centers sit near a class, and are they its semantic neighbours? Pick $C$, $q$ and a "
            "center method:",
        new="What happens to $d_{\\min}$ and $S_{loss}$ if you shorten the code, switch from MDS to SHC centers, or "
            "(on the demonstration page, whose grid holds several $C$) add classes? Which centers sit near a class, "
            "and are they its semantic neighbours? Pick the settings the grid holds and a center method:",
        why="offered a choice of C that the page's explorer grid, of this testbed's one C, does not hold"),
    Correction(
        "00_center_geometry",
        old="Distance-only generators scatter the coarse classes; semantic centers pull the classes of one coarse "
            "class together, as $\\mathbf{S}$ asks.",
        new="Distance-only generators place the classes without regard to their coarse class; semantic centers can "
            "pull the classes of one coarse class together only as far as $\\mathbf{S}$ rates them alike (Section 4).",
        why="overstates what the embedding shows (an audit of standard's page measured SHC's within- to "
            "between-coarse-class distance ratio at 0.90, MDS's at 0.92)"),
    # two reader audits of standard-modes, standard-unseen and standard-pretrained-unseen (2026-12-05): sentences the
    # notebooks have since reworded (shc-ls's objective, pages a set does not build, other datasets' hierarchies)
    Correction(
        "02_hash_centers",
        old="the same objective and constraint solved by exact feasible local search",
        new="the semantic loss under the same constraint, without the spreading term (Eq. 22 with $\\mu = 0$), solved "
            "by a feasible local search whose every move's cost is computed exactly",
        why=_SHC_LS),
    Correction(
        "00_center_geometry",
        old="feasible local search on the SHC objective,",
        new="feasible local search on the semantic loss of Eq. 22 without its spreading term,",
        why=_SHC_LS),
    Correction(  # typed on some pages, computed from shc.methods.OUTSIDE_PAPER on others
        "06_baselines",
        old="SHC's objective and constraint solved by exact local search",
        new="SHC's semantic loss without its spreading term (Eq. 22 with mu = 0), under SHC's distance constraint, "
            "solved by exact local search",
        why=_SHC_LS),
    Correction(  # the methods' table, from shc.methods.METHODS["shc-ls"].reference
        "06_baselines",
        old="SHC's center loss with centers from exact feasible local search on the same objective "
            "(shc.centers.search; docs/centers.md).",
        new="SHC's center loss with centers from exact feasible local search on SHC's semantic loss without its "
            "spreading term (Eq. 22 with mu = 0), under the same distance constraint (shc.centers.search; "
            "docs/centers.md).",
        why=_SHC_LS, table="tables/methods.csv"),
    Correction(
        "01_similarity",
        old="notebook 05 measures which one gives the better retrieval.",
        new="notebook 05 (where the preset builds it: the index lists its pages) measures which one gives the better "
            "retrieval.",
        why="points to page 05, which this report set does not build (its index lists its pages)",
        when=_without_page_05),
    Correction(
        "02_hash_centers",
        old="Whether these trade-offs pay off in retrieval is measured in notebooks 04 and 05.",
        new="Whether these trade-offs pay off in retrieval is measured in notebook 04 (and by the ablations of "
            "notebook 05, where the preset builds it: the index lists its pages).",
        why="points to page 05, which this report set does not build (its index lists its pages)",
        when=_without_page_05),
    Correction(
        "01_similarity",
        old="Where the dataset has a hierarchy (digits composite: the first digit; CIFAR-100: its 20 superclasses; "
            "NABirds: the parent in its taxonomy),",
        new="Where the dataset has a hierarchy (every class under one coarse class; the dataset's line at the top of "
            "this page names it),",
        why="named other datasets' hierarchies, none of them this page's (the dataset's line at its top names it)"),
    Correction(
        "01_similarity",
        old="Where the dataset has a hierarchy (the composites: the first item or digit; fashion-modes: the item; "
            "CIFAR-100: its 20 superclasses; NABirds: the parent in its taxonomy),",
        new="Where the dataset has a hierarchy (every class under one coarse class; the dataset's line at the top of "
            "this page names it),",
        why="named other datasets' hierarchies beside this page's (the dataset's line at its top names it)"),
    Correction(
        "02_hash_centers",
        old="$\\mathbf{S}$); it returns the best final state, and whether",
        new="$\\mathbf{S}$), then once more after a pair descent from the best of them (the last record, the "
            "returned centers); and whether",
        why="the page's own search history contradicts (each run's last record is a pair descent from the best "
            "start: the centers returned)"),
    Correction(
        "03_train_hashing",
        old="followed by a fully connected hash layer with $\\tanh$ outputs $\\mathbf{b}_{0i} \\in (-1, 1)^q$; the "
            "code is $\\mathbf{b}_i = \\mathrm{sign}(\\mathbf{b}_{0i})$ (Eq. 39).",
        new="followed by a fully connected hash layer; for the center methods its outputs pass through $\\tanh$, "
            "$\\mathbf{b}_{0i} \\in (-1, 1)^q$, and the code is $\\mathbf{b}_i = \\mathrm{sign}(\\mathbf{b}_{0i})$ "
            "(Eq. 39); the other baselines keep their published heads (page 06's methods table; "
            "<code>docs/baselines.md</code>).",
        why="the code contradicts: the baselines outside the center methods keep their published heads (page 06's "
            "methods table gives each)"),
    Correction(
        "03_train_hashing",
        old="a curve that flattens and peaks at the end (the cosine schedule's learning rate reaches 0 there) is "
            "what a converged run looks like.",
        new="a curve that flattens near the end (the cosine schedule's learning rate reaches 0 there) has stopped "
            "gaining, and one that peaks earlier and falls has overfitted its training images (model selection "
            "keeps its peak).",
        why="gave no reading of a curve that peaks early and falls, whose peak model selection keeps (the page's "
            "table gives the selected epochs)"),
    Correction(
        "04_retrieval",
        old="for each method with centers at the longest code length",
        new="for each example method (<code>example_methods</code>) at the longest code length",
        why="the page's figures contradict: it maps only the example methods' codes"),
    Correction(
        "04_retrieval",
        old="for each method, with their top results in Hamming ranking:",
        new="for each example method (<code>example_methods</code>), with their top results in Hamming ranking:",
        why="the page's figures contradict: it shows only the example methods' queries"),
    Correction(
        "04_retrieval",
        old="the stored codes (ties by database index, the ranking the metrics above evaluate); the same index serves "
            "your own images: see \"Search your own images\" in the README.",
        new="the stored codes, ties broken by database index (the ranking of the \"ties by index\" metrics above; the "
            "tie-aware ones average over the orders of tied results); the same index serves your own images: see "
            "\"Search your own images\" in <code>docs/retrieval.md</code>.",
        why="gave the order of the \"ties by index\" metrics to every metric above (the tie-aware ones average over "
            "tie orders) and sent readers to the README for a section that is in docs/retrieval.md"),
    Correction(
        "06_baselines",
        old="06 · SHC against the paper's nine baselines",
        new="06 · SHC against the paper's baselines",
        why="promises the paper's nine baselines on a page whose runs leave some out (its methods' table)",
        when=_fewer_paper_baselines),
    Correction(
        "06_baselines",
        old="Data, splits, network, optimiser, schedule, model selection on the validation split and the metric code "
            "(<code>shc.metrics</code>) are shared, so the method name is the only thing that changes between rows "
            "of these tables.",
        new="Data, splits, backbone, optimiser, learning rate, model selection on the validation split and the "
            "metric code (<code>shc.metrics</code>) are shared; what changes between rows is the method: its loss, "
            "its centers or codebook and its hash head (the methods' table) and, where the doubling rule asked for "
            "more, its epochs (the budgets under section 3's table; the rule: a budget stands when doubling it does "
            "not move the validation mAP by more than a set threshold, <code>docs/evaluation.md</code>).",
        why="the page's own tables contradict: the methods' table gives each method its hash head, and the budgets "
            "under section 3's table differ between methods"),
    Correction(
        "06_baselines",
        old="Times depend on the machine and its load: compare them within one run of this notebook.",
        new="Times depend on the device and its load (how many runs shared it), and this page does not name the "
            "device each run trained on: its times compare methods only roughly.",
        why="told readers to compare times within one run of this notebook, which trains nothing: it reads runs "
            "trained before it, each on its device and under its load"),
    # a reader audit of standard-unseen (2026-12-05): what the unseen sets' runs did before 2026-12-02
    Correction(
        "01_similarity",
        old="Test accuracy is measured on the query split (the paper's test set).",
        new="Test accuracy is measured on the query split (the paper's test set), but on this page it is not "
            "comparable with the paper's: its stage 1 (recorded before 2026-12-02) counted each query image of a held-out class, "
            "which the classifier cannot name, as an error, so the test accuracy in its summary, table and closing "
            "sentences is at most the seen classes' share of the queries; today's code reports it as n/a "
            "(docs/unseen.md).",
        why="gave, as the classifier's test accuracy, a number that counts each query of a held-out class (which "
            "the classifier cannot name) as an error",
        when=_unseen_selected_the_old_way),
    Correction(
        "04_retrieval",
        old="a seeded quarter of the classes never reaches a training stage;",
        new="a seeded quarter of the classes never reaches a training stage (but on this page's runs, trained before "
            "2026-12-02, stage 3's model selection ranked the validation queries against the whole database, held-out "
            "images included, so they took part in choosing each run's epoch: docs/unseen.md, \"Model selection "
            "without the held-out images\");",
        why="left out that these runs' model selection (before 2026-12-02) ranked the validation queries against a "
            "database holding the held-out images",
        when=_unseen_selected_the_old_way),
    # the reader audit of standard-modes (2026-12-05), page 00: blocks its S and centers do not show
    Correction(
        "00_center_geometry",
        old="Rows and columns are in coarse-class order, so the blocks on the diagonal are the coarse classes.",
        new="Rows and columns are in coarse-class order, so the classes of one coarse class are neighbours: where "
            "$\\mathbf{S}$ rates them above the rest, the coarse classes show as blocks on the diagonal.",
        why="the page's own S contradicts where its coarse classes are not rated above the rest (on fashion-modes "
            "the mean S between two modes of Shirt is -0.009, of Coat 0.046)"),
    Correction(
        "00_center_geometry",
        old="SHC's shows the diagonal blocks of $\\mathbf{S}$ while keeping every off-diagonal cosine at most "
            "$1 - 2d/q$.",
        new="SHC's is pulled towards $\\mathbf{S}$ while keeping every off-diagonal cosine at most $1 - 2d/q$ (how "
            "close it gets is its $S_{loss}$ in Section 6).",
        why="overstates what the figure's data show where S has faint blocks (on fashion-modes SHC's mean cosine is "
            "0.072 within a coarse class and -0.015 between)"),
    Correction(
        "00_center_geometry",
        old="it stays well below the $q/2$ of orthogonal codes,",
        new="it stays below the $q/2$ of orthogonal codes in the plotted range,",
        why="the page's own table contradicts: it gives d = 58 at q = 128 and C = 10, d/q = 0.453"),
    # a reader audit of standard-pretrained-unseen (2026-12-05): what an unseen preset's figures and side-by-side hold
    Correction(
        "04_retrieval",
        old="semantic centers should also place related classes near each other.",
        new="semantic centers should also place related classes near each other, and on an unseen-class preset "
            "(<code>*-unseen</code>) the held-out classes have no center: their codes are drawn, coloured by their "
            "coarse class, with none to gather at.",
        why="left out that the held-out classes, a quarter of the codes drawn, have no center (the figure's data "
            "hold the centers of the seen classes only)",
        when=_unseen_preset),
    Correction(
        "04_retrieval",
        old="The legend gives each method's Spearman correlation.",
        new="The legend gives each method's Spearman correlation; on an unseen-class preset the figure has the seen "
            "classes only: $\\mathbf{S}$ has rows for the classes stage 1 trained on, none for the held-out ones.",
        why="left out that the figure holds the seen classes only (its data have no held-out class)",
        when=_unseen_preset),
    Correction(
        "04_retrieval",
        old="The same evenly spaced queries",
        new="The same queries, the first of each of evenly spaced classes,",
        why="called them evenly spaced queries; they are the first query of each of evenly spaced classes (the "
            "figure's data give their ids)"),
    Correction(
        "06_baselines",
        old="(mean paired difference over seeds with its 95% t-interval; \"best baseline\" is the best of",
        new="(mean paired difference over seeds with its 95% t-interval; on an unseen-class preset over every query, "
            "the held-out classes' included, against the whole database, a protocol Table 4 does not have; \"best "
            "baseline\" is the best of",
        why="called differences over every query, the held-out classes' included, the same differences as the "
            "paper's Table 4, which holds no class out",
        when=_unseen_preset),
)
