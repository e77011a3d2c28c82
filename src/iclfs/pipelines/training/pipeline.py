from kedro.pipeline import Node, Pipeline

from .nodes import plot_training_history, train_model


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(
                train_model,
                inputs=["inverted_data", "params:training", "params:views", "params:runtime", "params:consensus",
                        "params:seed"],
                outputs=["model_state", "training_history", "member_scores", "training_loss"],
                name="train_model",
            ),
            Node(plot_training_history, inputs="training_history", outputs="training_loss_plot",
                 name="plot_training_history"),
        ]
    )
