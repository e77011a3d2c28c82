from kedro.pipeline import Node, Pipeline

from .nodes import invert_data, validate_and_standardize


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(
                validate_and_standardize,
                inputs=["raw_data", "params:training", "params:runtime", "params:laplacian", "params:selection",
                        "params:members"],
                outputs=["standardized_data", "labels", "feature_names", "ground_truth"],
                name="validate_and_standardize",
            ),
            Node(invert_data, inputs="standardized_data", outputs="inverted_data", name="invert_data"),
        ]
    )
