from kedro.pipeline import Node, Pipeline

from .nodes import compute_laplacian_scores


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(
                compute_laplacian_scores,
                inputs=["standardized_data", "feature_names", "params:laplacian"],
                outputs="laplacian_scores",
                name="compute_laplacian_scores",
            )
        ]
    )
