from kedro.pipeline import Node, Pipeline

from .nodes import plot_training_log, start_history, train_members


def create_pipeline(**kwargs) -> Pipeline:
    """The run's decision about its members (``history_start``, made once), then its training at that seed."""
    return Pipeline([
        Node(start_history, inputs=["previous_member_history", "feature_names", "params:members", "params:selection",
                                    "params:seed"],
             outputs="history_start", name="start_history"),
        Node(train_members, inputs=["inverted_data", "feature_names", "ground_truth", "params:training",
                                    "params:views", "params:runtime", "params:members", "params:ranking",
                                    "history_start", "params:selection", "params:baselines", "measured_data"],
             outputs=["model_state", "training_log", "member_scores"], name="train_members"),
        Node(plot_training_log, inputs="training_log", outputs="training_loss_plot", name="plot_training_log"),
    ])
