"""See the geometry move: an interactive explorer of hash centers, for teaching (issue 23).

Three faces, one computation:

* :func:`explorer_view` (pure): for C classes, q bits, a similarity source, a center method and its required
  distance d (default: the Gilbert-Varshamov d, Eq. 13), the centers (``shc.centers.run_center_method``, cached
  in a :class:`CenterCache`), their quality (d_min, Eq. 44; S_loss, Eq. 45), the distribution of pairwise
  distances (Eq. 17), S beside H H^T / q (Eq. 14) and, per class, :func:`nearest_centers`.
* :class:`Explorer`: the live explorer for JupyterLab and Voila (ipywidgets controls, views updated in place;
  centers not yet cached are computed in a background thread behind a visible progress bar).
* :func:`precompute_grid` + :func:`offline_view`: the same views for a small grid of settings as compact JSON
  (centers as packed bits, S as int8 percent) with a small inline JavaScript renderer
  (``shc/assets/explorer.js``): a self-contained page section that needs no kernel and no network.

:func:`geometry_lessons` reduces a grid to the cases that teach most (collisions of semantic-only centers,
Algorithm 1's oscillation at short codes, how far SHC moves from its MDS start); :mod:`shc.findings` states them.
``python -m shc.explore`` serves notebook 00's explorer as a web page without code (Voila; docs/explorer.md).

Every center method of :data:`shc.centers.CENTER_GENERATORS` appears automatically; every similarity source of
:data:`SIMILARITY_SOURCES` too.
"""

from __future__ import annotations

import argparse
import base64
import errno
import html
import json
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from shc.centers import (CENTER_GENERATORS, center_quality, geometry_lesson, gv_min_distance, hamming_distances,
                         max_codes_upper_bound, run_center_method)
from shc.explore_sources import (SIMILARITY_SOURCES, PageSimilarity, SimilaritySource, live_settings, page_similarity,
                                 preset_similarity, similarity_for)
from shc.similarity import validate_similarity
from shc.validation import hamming_distance_matrix

__all__ = ["SHARED_CACHE", "SIMILARITY_SOURCES", "CenterCache", "Explorer", "ExplorerView", "SimilaritySource",
           "PageSimilarity", "app_notebook", "explorer_view", "grid_json", "geometry_lessons", "nearest_centers",
           "live_settings", "offline_view", "page_grid", "page_similarity", "precompute_grid", "preset_similarity",
           "serve", "similarity_for"]

_ASSET = Path(__file__).resolve().parent / "assets" / "explorer.js"
#: Cells of notebook 00 that make up the app (besides the parameters cell): tagged with this in their metadata.
APP_TAG = "explorer"
NOTEBOOK = "00_center_geometry"


# --------------------------------------------------------------------------------------------
# The computation behind every view
# --------------------------------------------------------------------------------------------
class CenterCache:
    """Centers (and Algorithm 1's record) by (method, C, q, d, seed, S); thread-safe, computed on demand."""

    def __init__(self) -> None:
        self._entries: dict[tuple, tuple[np.ndarray, list[dict[str, float]]]] = {}
        self._lock = threading.Lock()
        self.computed = 0

    @staticmethod
    def key(method: str, S: np.ndarray, bits: int, min_distance: int | None, seed: int) -> tuple:
        return (method, S.shape[0], int(bits), min_distance, int(seed), hash(S.tobytes()))

    def __contains__(self, key: tuple) -> bool:
        with self._lock:
            return key in self._entries

    def get(self, method: str, S: np.ndarray, bits: int, min_distance: int | None,
            seed: int) -> tuple[np.ndarray, list[dict[str, float]]]:
        key = self.key(method, S, bits, min_distance, seed)
        with self._lock:
            if key in self._entries:
                return self._entries[key]
        options = {"min_distance": min_distance} if _takes_distance(method) and min_distance is not None else {}
        result = run_center_method(method, S.shape[0], int(bits), S, int(seed), **options)
        with self._lock:
            self._entries[key] = result
            self.computed += 1
        return result


#: The cache every explorer and grid of a kernel share unless given their own (notebook 00's grid fills it, so its
#: live explorer answers at once on the grid's settings).
SHARED_CACHE = CenterCache()


def _takes_distance(method: str) -> bool:
    return "min_distance" in CENTER_GENERATORS.get(method).options


@dataclass
class ExplorerView:
    """Everything one setting of the explorer shows (all computed by :func:`explorer_view`)."""

    method: str
    num_classes: int
    bits: int
    required_distance: int  # the d the method was asked for (the GV d unless set; 0 for methods without one)
    gv_distance: int
    S: np.ndarray
    centers: np.ndarray
    history: list[dict[str, float]]
    class_names: list[str]
    quality: dict[str, float]
    histogram: np.ndarray  # counts of unordered pairs at Hamming distance 0..q
    gram: np.ndarray = field(repr=False)  # H H^T / q

    def summary(self) -> dict[str, Any]:
        """The numbers the explorer prints above its figures."""
        return {"C": self.num_classes, "q": self.bits, "method": self.method, "GV d": self.gv_distance,
                "required d": self.required_distance, "d_min": int(self.quality["d_min"]),
                "pairs at d_min": int(self.quality["num_at_d_min"]),
                "colliding pairs": int(self.histogram[0]),
                "mean distance": round(float(self.quality["mean_distance"]), 3),
                "S_loss": round(float(self.quality["s_loss"]), 5),
                "Spearman": round(float(self.quality["spearman"]), 3)}


def explorer_view(method: str, S: np.ndarray, bits: int, class_names: Sequence[str] | None = None, *,
                  min_distance: int | None = None, seed: int = 0, cache: CenterCache | None = None) -> ExplorerView:
    """One setting's views: centers of ``method`` for S at q bits, their d_min (Eq. 44) and S_loss (Eq. 45),
    the histogram of pairwise distances (Eq. 17) and H H^T / q beside S (Eq. 14).

    ``min_distance`` None means the Gilbert-Varshamov d (Eq. 13) for the methods that take one (mds, shc,
    shc-ls); the others ignore it (their required d is reported as 0).
    """
    S = validate_similarity(S)
    C = S.shape[0]
    CENTER_GENERATORS.get(method)  # an unknown method names the known ones
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)):
        raise TypeError(f"bits must be an integer (the code length q), got {bits!r}.")
    names = [str(c) for c in range(C)] if class_names is None else [str(name) for name in class_names]
    if len(names) != C:
        raise ValueError(f"class_names has {len(names)} names for {C} classes; give one name per row of S.")
    if len(set(names)) != C:
        repeated = sorted(name for name, count in Counter(names).items() if count > 1)[:3]
        raise ValueError(f"class_names repeats {repeated}: each class needs its own name (nearest_centers looks a "
                         "class up by it).")
    gv = gv_min_distance(C, int(bits))
    centers, history = (cache or SHARED_CACHE).get(method, S, bits, min_distance, seed)
    H = centers.astype(np.float64)
    distances = hamming_distances(centers)
    upper = distances[np.triu_indices(C, k=1)].astype(int)
    required = (gv if min_distance is None else int(min_distance)) if _takes_distance(method) else 0
    return ExplorerView(method, C, int(bits), required, gv, S, centers, list(history), names,
                        center_quality(centers, S), np.bincount(upper, minlength=int(bits) + 1), H @ H.T / int(bits))


def _gv_or_zero(num_classes: int, bits: int) -> int:
    """The Gilbert-Varshamov d of C classes at q bits (Eq. 13), 0 where no C distinct codes exist (C > 2^q)."""
    return gv_min_distance(num_classes, bits) if bits >= 63 or num_classes <= 2 ** bits else 0


def _reachable(num_classes: int, bits: int) -> bool:
    """Whether C codes of q bits at the Gilbert-Varshamov d (Eq. 13) can exist (C <= 2^q, and C at most the
    Hamming/Plotkin bound at that d: :func:`shc.centers.max_codes_upper_bound`). GV guarantees C codes at d - 1
    only; at small q no C codes reach d (C = 150 at q = 8: d = 2 allows 128)."""
    if bits < 63 and num_classes > 2 ** bits:
        return False
    return max_codes_upper_bound(bits, gv_min_distance(num_classes, bits)) >= num_classes


def nearest_centers(view: ExplorerView, class_name: str, k: int = 5):
    """The ``k`` centers nearest to the center of ``class_name`` (ties in class order): Hamming distance and S."""
    import pandas as pd

    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer (how many nearest centers), got {k!r}.")
    if class_name not in view.class_names:
        raise ValueError(f"unknown class {class_name!r}; pick one of the {len(view.class_names)} class names, "
                         f"e.g. {view.class_names[0]!r}.")
    i = view.class_names.index(class_name)
    distances = hamming_distance_matrix(view.centers[i:i + 1], view.centers)[0]
    order = np.argsort(distances, kind="stable")
    others = order[order != i][: int(k)]
    return pd.DataFrame({"class": [view.class_names[j] for j in others], "Hamming distance": distances[others],
                         "S": np.round(view.S[i, others], 3)}, index=pd.RangeIndex(1, len(others) + 1, name="rank"))


# --------------------------------------------------------------------------------------------
# Offline: a grid of settings as compact JSON and an inline renderer
# --------------------------------------------------------------------------------------------
def _pack(centers: np.ndarray) -> str:
    return base64.b64encode(np.packbits(np.asarray(centers) > 0, axis=1).tobytes()).decode("ascii")


def _pack_similarity(S: np.ndarray) -> str:
    """A symmetric S as int8 percent of its upper triangle, diagonal included, row by row (base64): C(C+1)/2 bytes,
    half of the full matrix (333 classes: 55 kB, not 111 kB, before base64); the renderer mirrors it."""
    S = np.asarray(S)
    return base64.b64encode(np.round(S[np.triu_indices(len(S))] * 100).astype(np.int8).tobytes()).decode("ascii")


def precompute_grid(classes: Sequence[int] = (16, 32, 100), bits: Sequence[int] = (8, 16, 32, 64),
                    methods: Sequence[str] | None = None, source: str = "label", seed: int = 0,
                    cache: CenterCache | None = None, progress: Callable[[str], None] | None = None,
                    similarity: tuple[np.ndarray, Sequence[str]] | None = None) -> dict[str, Any]:
    """Every (C, q, method) of the grid through :func:`explorer_view`: the data of :func:`offline_view` and of
    :func:`geometry_lessons`. ``methods`` None: every registered center method. Settings with C > 2^q are
    left out (no C distinct centers exist), and so are those where no C codes reach the Gilbert-Varshamov d that
    MDS and SHC are asked for (its bound guarantees d - 1 only: C = 150 at q = 8, C = 9 at q = 6); a q that no C of
    the grid fits is left out of its ``bits`` (the explorer does not offer it: at C = 333, q = 8 would open on an
    empty view). A source of fixed classes (``"preset"``: a run's stage-1 S) needs ``classes`` = its C.

    ``similarity`` = ``(S, class names)`` gives the grid one matrix of its own (a page's testbed S,
    :func:`page_similarity`) instead of a registered source: then ``classes`` must be ``[C]`` of that S, and
    ``source`` is only the name the view shows."""
    methods = list(CENTER_GENERATORS.names() if methods is None else methods)
    for method in methods:
        CENTER_GENERATORS.get(method)
    if not classes or not bits or not methods:
        raise ValueError("classes, bits and methods must each name at least one value; e.g. classes=[16], bits=[8].")
    if similarity is not None:
        given = validate_similarity(similarity[0])
        if [int(c) for c in classes] != [given.shape[0]] or len(similarity[1]) != given.shape[0]:
            raise ValueError(f"a grid of one given S of {given.shape[0]} classes needs classes=[{given.shape[0]}] "
                             f"and {given.shape[0]} class names; got classes={list(classes)} and "
                             f"{len(similarity[1])} names.")
    cache = cache or SHARED_CACHE
    views: dict[tuple[int, int, str], ExplorerView] = {}
    similarities = {}
    for C in classes:
        S, names = (given, [str(n) for n in similarity[1]]) if similarity is not None else similarity_for(source, C, seed)
        if S.shape[0] != int(C):  # a source of fixed classes (a preset's stage-1 S) ignores C
            raise ValueError(f"the similarity source {source!r} has {S.shape[0]} classes, not {C}: give "
                             f"classes=[{S.shape[0]}] for it.")
        similarities[int(C)] = (S, names)
        for q in bits:
            if not _reachable(int(C), int(q)):
                continue
            for method in methods:
                if progress is not None:
                    progress(f"C = {C}, q = {q}, {method}")
                views[(int(C), int(q), method)] = explorer_view(method, S, int(q), names, seed=seed, cache=cache)
    fitting = [int(q) for q in bits if any(key[1] == int(q) for key in views)]  # a q no C fits is not offered
    if not fitting:
        shortest = max(8, 2 ** int(np.ceil(np.log2(np.ceil(np.log2(min(classes)))))))  # a power of two: CSQ's rule
        raise ValueError(f"no code length of {list(bits)} holds {min(classes)} distinct centers (C <= 2^q); "
                         f"add a longer one, e.g. bits=[{shortest}].")
    return {"source": source, "seed": int(seed), "classes": [int(c) for c in classes],
            "bits": fitting, "methods": methods, "similarities": similarities, "views": views}


def page_grid(target: PageSimilarity, classes: Sequence[int] = (16, 32, 100), bits: Sequence[int] = (8, 16, 32, 64),
              seed: int = 0, cache: CenterCache | None = None) -> dict[str, Any]:
    """The offline explorer's grid of a geometry page (notebook 00): a testbed's page (``target.preset`` set) opens
    on its own C and S alone (``classes`` is not used); the demonstration on each C of ``classes`` of the
    tens-digit label S."""
    if target.preset is not None:
        return precompute_grid([len(target.class_names)], bits, seed=seed, source=target.source.removesuffix(" S"),
                               cache=cache, similarity=(target.matrix, target.class_names))
    return precompute_grid(classes, bits, seed=seed, cache=cache)


def grid_json(grid: dict[str, Any]) -> dict[str, Any]:
    """The compact JSON of a grid: S per C as int8 percent of its upper triangle (base64), centers as packed bits
    (base64), and the
    numbers Python computed (d_min, S_loss, ...) for the renderer to show and the tests to compare."""
    similarities = {str(C): {"names": names, "S": _pack_similarity(S)} for C, (S, names) in grid["similarities"].items()}
    views = {f"{C}/{q}/{method}": {"centers": _pack(view.centers), "summary": _finite(view.summary())}
             for (C, q, method), view in grid["views"].items()}
    return {"source": grid["source"], "seed": grid["seed"], "classes": grid["classes"], "bits": grid["bits"],
            "methods": grid["methods"], "similarities": similarities, "views": views}


def _finite(summary: dict[str, Any]) -> dict[str, Any]:
    """NaN (a Spearman correlation undefined for constant centers or S) becomes null: JSON has no NaN."""
    return {k: None if isinstance(v, float) and not np.isfinite(v) else v for k, v in summary.items()}


class OfflineView:
    """A self-contained HTML section (``_repr_html_``): controls, summary, histogram, S beside H H^T / q, nearest
    centers, drawn by inline JavaScript from inline JSON. No kernel, no network."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.html = _offline_html(data)

    def _repr_html_(self) -> str:
        return self.html

    def __len__(self) -> int:
        return len(self.html)


def offline_view(grid: dict[str, Any]) -> OfflineView:
    """The offline explorer of a :func:`precompute_grid` grid (embedded in notebook 00's report)."""
    return OfflineView(grid_json(grid))


def _offline_html(data: dict[str, Any]) -> str:
    payload = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    script = _ASSET.read_text(encoding="utf-8")
    return (f'<div class="shc-explorer" data-source="{html.escape(data["source"])}">'
            f'<script type="application/json" class="shc-explorer-data">{payload}</script>'
            f'<div class="shc-explorer-root">The offline explorer needs JavaScript.</div>'
            f"<script>{script}</script></div>")


# --------------------------------------------------------------------------------------------
# What teaches: collisions, oscillation, movement from the MDS start
# --------------------------------------------------------------------------------------------
def geometry_lessons(grid: dict[str, Any]):
    """Per (C, q) of a grid: colliding class pairs (distance 0) of the semantic-only centers, Algorithm 1's
    S_loss reversals and rises over its cycles (oscillation), and how many bits SHC moved from its MDS start.

    Needs "mds", "shc" and "semantic" in the grid (the rows of a missing method are NaN).
    """
    import pandas as pd

    rows = []
    for C in grid["classes"]:
        for q in grid["bits"]:
            get = grid["views"].get
            semantic, shc, mds = get((C, q, "semantic")), get((C, q, "shc")), get((C, q, "mds"))
            if semantic is None and shc is None:
                continue
            row: dict[str, Any] = {"C": C, "q": q, **geometry_lesson(
                semantic=semantic.centers if semantic else None,
                shc=shc.centers if shc and mds else None, mds=mds.centers if shc and mds else None,
                shc_s_loss=[record["s_loss"] for record in shc.history] if shc else None)}
            if semantic is None:
                row |= {"semantic colliding pairs": np.nan, "semantic d_min": np.nan}
            if shc is not None:
                row["shc S_loss best"] = float(shc.quality["s_loss"])
            rows.append(row)
    return pd.DataFrame(rows).set_index(["C", "q"])


# --------------------------------------------------------------------------------------------
# The live explorer (ipywidgets)
# --------------------------------------------------------------------------------------------
def _widgets():
    try:
        import ipywidgets
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("the live explorer needs ipywidgets; install the extra: pip install -e '.[explore]'") \
            from error
    return ipywidgets


class Explorer:
    """The live center explorer: controls for C, q, the similarity source, the center method and its d, and a
    class; views updated in place. Display it in JupyterLab (or serve notebook 00 with ``python -m shc.explore``).

    Centers already computed answer at once; others are computed in a background thread (``background=True``)
    with a progress bar, so the kernel never freezes; :meth:`wait` blocks until the current view is shown.
    ``preset`` / ``dataset`` / ``run_dir`` say which stored stage-1 S the "preset" source reads.
    """

    def __init__(self, num_classes: int = 32, bits: int = 16, source: str = "label", method: str = "shc",
                 seed: int = 0, *, preset: str = "quick", dataset: str | None = None, run_dir: str | None = None,
                 bit_choices: Sequence[int] = (8, 16, 32, 64, 128), max_classes: int = 200,
                 background: bool = True, cache: CenterCache | None = None) -> None:
        SIMILARITY_SOURCES.get(source), CENTER_GENERATORS.get(method)  # an unknown name: the registry's error,
        w = _widgets()  # naming the known ones (a widget's TraitError named neither the argument nor the choices)
        self.cache = cache or SHARED_CACHE
        self.seed = int(seed)
        self.background = background
        self.context = {"preset": preset, "dataset": dataset, "run_dir": run_dir}
        self.view: ExplorerView | None = None
        self.error: str | None = None
        self._thread: threading.Thread | None = None
        self._generation = 0
        self._show_lock = threading.RLock()
        self._similarities: dict[tuple, tuple[np.ndarray, list[str]]] = {}
        style = {"description_width": "initial"}
        # the values asked for are always offered: a C above max_classes or a q outside bit_choices is added, not
        # clamped to another setting (a page's 333 classes showed 200) or refused with a widget's TraitError
        self.classes = w.IntSlider(value=int(num_classes), min=2, max=max(int(max_classes), int(num_classes)),
                                   description="classes C", continuous_update=False, style=style)
        self.bits = w.Dropdown(options=sorted({*(int(q) for q in bit_choices), int(bits)}), value=int(bits),
                               description="bits q", style=style)
        self.source = w.Dropdown(options=SIMILARITY_SOURCES.names(), value=source, description="similarity S",
                                 style=style)
        self.method = w.Dropdown(options=CENTER_GENERATORS.names(), value=method, description="center method",
                                 style=style)
        self.use_gv = w.Checkbox(value=True, description="d = Gilbert-Varshamov d (Eq. 13)", style=style)
        self.distance = w.IntSlider(value=_gv_or_zero(int(num_classes), int(bits)), min=0, max=max(int(bits), 0),
                                    description="required d", disabled=True, continuous_update=False, style=style)
        self.class_name = w.Dropdown(options=[], description="class", style=style)
        self.progress = w.IntProgress(value=0, min=0, max=1, description="", bar_style="info",
                                      layout=w.Layout(visibility="hidden", width="30%"))
        self.status = w.HTML()
        self.summary_html = w.HTML()
        self.figure = w.Image(format="png")
        self.nearest_html = w.HTML()
        controls = w.VBox([w.HBox([self.classes, self.bits, self.source]),
                           w.HBox([self.method, self.use_gv, self.distance]),
                           w.HBox([self.class_name, self.progress, self.status])])
        self.widget = w.VBox([w.HTML("<b>Center explorer</b> (shc.explore): change a control, the views follow."),
                              controls, self.summary_html, self.figure, self.nearest_html])
        for control in (self.classes, self.bits, self.source, self.method, self.use_gv, self.distance):
            control.observe(self._changed, names="value")
        self.class_name.observe(lambda _: self._show_nearest(), names="value")
        self.update()

    # -- the widget in a frontend ------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data = dict(data)
        # pages without a kernel show this instead of a widget that cannot run there (shc.reports.export)
        data["text/html"] = ("<p><em>The live explorer runs in a Jupyter kernel (JupyterLab, or "
                             "<code>python -m shc.explore</code>); the offline explorer above shows its views "
                             "for a precomputed grid.</em></p>")
        data.pop("text/plain", None)
        return data

    # -- updating -----------------------------------------------------------------------------
    def _changed(self, change: Any = None) -> None:
        self.distance.disabled = self.use_gv.value or not _takes_distance(self.method.value)
        self.distance.max = int(self.bits.value)
        if self.use_gv.value:  # the slider waits at the GV d, so unticking the box starts from it, not from 0
            self.distance.unobserve(self._changed, names="value")
            self.distance.value = _gv_or_zero(self.classes.value, self.bits.value)
            self.distance.observe(self._changed, names="value")
        self.update()

    def _similarity(self) -> tuple[np.ndarray, list[str]]:
        key = (self.source.value, self.classes.value if not SIMILARITY_SOURCES.get(self.source.value).fixed_classes
               else None, self.seed)
        if key not in self._similarities:
            self._similarities[key] = similarity_for(self.source.value, self.classes.value, self.seed,
                                                     **self.context)
        return self._similarities[key]

    def settings(self) -> dict[str, Any]:
        """The current control values (what :func:`explorer_view` is called with)."""
        return {"source": self.source.value, "num_classes": self.classes.value, "bits": self.bits.value,
                "method": self.method.value, "seed": self.seed,
                "min_distance": None if self.use_gv.value else int(self.distance.value)}

    def update(self) -> None:
        """Recompute the view for the current controls: at once when cached, else in the background."""
        with self._show_lock:
            self._generation += 1
            generation = self._generation
        try:
            S, names = self._similarity()
        except Exception as error:  # noqa: BLE001 - shown to the student, who can change the control
            self._fail(error)
            return
        settings = self.settings()
        if SIMILARITY_SOURCES.get(settings["source"]).fixed_classes and S.shape[0] != self.classes.value:
            self.classes.unobserve(self._changed, names="value")
            self.classes.max = max(self.classes.max, S.shape[0])
            self.classes.value = S.shape[0]
            self.classes.observe(self._changed, names="value")
        key = CenterCache.key(settings["method"], S, settings["bits"], settings["min_distance"], self.seed)

        def compute() -> None:
            try:
                view = explorer_view(settings["method"], S, settings["bits"], names,
                                     min_distance=settings["min_distance"], seed=self.seed, cache=self.cache)
            except Exception as error:  # noqa: BLE001
                if generation == self._generation:
                    self._fail(error)
                return
            with self._show_lock:  # a stale computation never overwrites a newer view
                if generation == self._generation:
                    self._show(view)

        if key in self.cache or not self.background:
            compute()
            return
        self.progress.layout.visibility = "visible"
        self.progress.bar_style, self.progress.max, self.progress.value = "info", 1, 0
        self.status.value = (f"computing {settings['method']} centers for C = {S.shape[0]}, q = {settings['bits']}"
                             " …")
        self._thread = threading.Thread(target=compute, daemon=True)
        self._thread.start()

    def wait(self, timeout: float | None = 120.0) -> Explorer:
        """Block until the background computation (if any) is shown; returns self."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self

    def _fail(self, error: Exception) -> None:
        self.error = str(error)
        self.progress.layout.visibility = "hidden"
        self.status.value = f'<span style="color:#b00">{html.escape(str(error))}</span>'

    def _show(self, view: ExplorerView) -> None:
        self.view, self.error = view, None
        self.progress.value = self.progress.max
        self.progress.layout.visibility = "hidden"
        self.status.value = ""
        summary = view.summary()
        self.summary_html.value = _html_table(summary)
        self.figure.value = _figure_png(view)
        if list(self.class_name.options) != view.class_names:
            current = self.class_name.value
            self.class_name.options = view.class_names
            self.class_name.value = current if current in view.class_names else view.class_names[0]
        self._show_nearest()

    def _show_nearest(self) -> None:
        if self.view is None or self.class_name.value not in self.view.class_names:
            return
        table = nearest_centers(self.view, self.class_name.value)
        self.nearest = table
        self.nearest_html.value = (f"<b>Nearest centers to class {html.escape(self.class_name.value)}</b>"
                                   + table.to_html())


def _html_table(summary: dict[str, Any]) -> str:
    cells = "".join(f"<th>{html.escape(str(k))}</th>" for k in summary)
    values = "".join(f"<td>{html.escape(str(v))}</td>" for v in summary.values())
    return f"<table><thead><tr>{cells}</tr></thead><tbody><tr>{values}</tr></tbody></table>"


def _figure_png(view: ExplorerView) -> bytes:
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(12, 3.6), dpi=80)
    axes = figure.subplots(1, 3)
    q = view.bits
    axes[0].bar(np.arange(q + 1), view.histogram, color="#4c72b0")
    axes[0].axvline(view.quality["d_min"], color="k", label=f"d_min = {int(view.quality['d_min'])}")
    axes[0].axvline(view.required_distance or view.gv_distance, color="#c44e52", linestyle="--",
                    label=f"{'required' if view.required_distance else 'GV'} d = "
                          f"{view.required_distance or view.gv_distance}")
    axes[0].set(xlabel="Hamming distance (bits)", ylabel="pairs of centers", title="pairwise distances")
    axes[0].legend(fontsize=8)
    for axis, matrix, title in ((axes[1], view.S, "S"), (axes[2], view.gram, "H Hᵀ / q")):
        axis.imshow(matrix, vmin=-1, vmax=1, cmap="RdBu_r", interpolation="nearest")
        axis.set(title=title, xticks=[], yticks=[])
    figure.tight_layout()
    buffer = io.BytesIO()  # in memory: no file is written
    FigureCanvasAgg(figure).print_png(buffer)
    return buffer.getvalue()


# --------------------------------------------------------------------------------------------
# The app: notebook 00's explorer served without code
# --------------------------------------------------------------------------------------------
def app_notebook(notebook_path: str | Path | None = None):
    """Notebook 00 reduced to its parameters cell and the cells tagged ``explorer``: the app's page."""
    import nbformat

    from shc._paths import repository_root

    path = Path(notebook_path) if notebook_path else repository_root() / "notebooks" / f"{NOTEBOOK}.ipynb"
    notebook = nbformat.read(str(path), as_version=4)
    kept = [cell for cell in notebook.cells
            if {"parameters", APP_TAG} & set(cell.metadata.get("tags", []))]
    if not any(APP_TAG in cell.metadata.get("tags", []) for cell in kept):
        raise ValueError(f"{path} has no cell tagged {APP_TAG!r}; tag the cells that build the explorer.")
    notebook.cells = kept
    return notebook


_HOST = "127.0.0.1"


def _port_to_serve(port: int) -> int:
    """``port`` checked (1..65535, free on :data:`_HOST`), or a free port for 0; the ValueError names --port."""
    import socket

    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port must be a number from 1 to 65535 (0: a free one), got {port!r}; choose another "
                         "--port.")
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will: a closed port is free
        try:
            probe.bind((_HOST, port))
        except OSError as error:
            reason = "in use by another server" if error.errno == errno.EADDRINUSE else error.strerror
            raise ValueError(f"--port {port} cannot be served on {_HOST} ({reason}); choose another --port, or "
                             "--port 0 for a free one.") from None
        return probe.getsockname()[1]


def _answers(server, port: int) -> bool:
    """Wait until ``server`` (a process) accepts connections on ``port`` (True) or exits (False)."""
    import socket
    import time

    while server.poll() is None:
        try:
            socket.create_connection((_HOST, port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.2)
    return False


def serve(port: int = 8866, notebook_path: str | Path | None = None, *, open_browser: bool = False,
          extra_arguments: Sequence[str] = ()) -> int:
    """Serve notebook 00's explorer as a web page without code (Voila); blocks until interrupted.

    ``port`` 0 takes a free port. The port is checked before Voila starts, Voila may not move to another one,
    and the address is printed once the server answers there.
    """
    import os
    import shutil
    import subprocess
    import sys
    import tempfile

    import nbformat

    from shc._io import write_text

    try:
        import voila  # noqa: F401
    except ImportError as error:
        raise ImportError("serving the explorer needs voila; install the extra: pip install -e '.[explore]'") \
            from error
    port = _port_to_serve(port)
    folder = Path(tempfile.gettempdir()) / f"shc-explorer-{os.getpid()}"  # this serving process's page, removed after
    page = write_text(folder / "center_explorer.ipynb", nbformat.writes(app_notebook(notebook_path)))
    command = [sys.executable, "-m", "voila", str(page), f"--port={port}", f"--Voila.ip={_HOST}",
               "--Voila.port_retries=0", "--theme=light", *([] if open_browser else ["--no-browser"]),
               *extra_arguments]
    server = subprocess.Popen(command)
    try:
        if not _answers(server, port):
            raise RuntimeError(f"the explorer's server (Voila) stopped with status {server.returncode} before serving "
                               f"{_HOST}:{port} (its messages are above); choose another --port, or --port 0.")
        print(f"serving the center explorer on http://{_HOST}:{port}/ (Ctrl-C stops it)", flush=True)
        return server.wait()
    finally:  # Ctrl-C, or SIGTERM (shc.cli_common.run_cli turns it into KeyboardInterrupt): the server goes too
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m shc.explore [--port N] [--open]``: serve the explorer until Ctrl-C or SIGTERM."""
    from shc.cli_common import run_cli

    return run_cli(_main, argv, interrupted="explorer stopped.")


def _main(argv: Sequence[str] | None = None) -> int:
    from shc.cli_common import port_number

    parser = argparse.ArgumentParser(prog="python -m shc.explore",
                                     description="Serve notebook 00's center explorer as a web page (Voila).")
    parser.add_argument("--port", type=port_number, default=8866,
                        help="port to serve on (default 8866; 0: a free one, printed)")
    parser.add_argument("--notebook", default=None, help="notebook to take the explorer from (default: notebook 00)")
    parser.add_argument("--open", action="store_true", help="open a browser")
    args = parser.parse_args(argv)
    return serve(args.port, args.notebook, open_browser=args.open)


if __name__ == "__main__":
    raise SystemExit(main())
