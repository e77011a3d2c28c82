from functools import partial, update_wrapper

from kedro.pipeline import Node, Pipeline

from .nodes import invert_data, validate_and_standardize


def create_pipeline(keep_measured: bool = False, **kwargs) -> Pipeline:
    """Validate, standardize and invert; with ``keep_measured`` (the benchmark, whose baselines include variance
    and dispersion) ``measured_data`` holds the table as measured whatever ``selection.method`` is."""
    validate = validate_and_standardize
    if keep_measured:
        validate = update_wrapper(partial(validate_and_standardize, keep_measured=True), validate_and_standardize)
    return Pipeline(
        [
            Node(
                validate,
                inputs=["raw_data", "params:training", "params:runtime", "params:laplacian", "params:selection",
                        "params:members", "params:baselines"],
                outputs=["standardized_data", "measured_data", "labels", "feature_names", "ground_truth"],
                name="validate_and_standardize",
            ),
            Node(invert_data, inputs="standardized_data", outputs="inverted_data", name="invert_data"),
        ]
    )
