from kedro.pipeline import Node, Pipeline

from .nodes import plot_training_history, start_history, train_model, train_one_run

_INPUTS = ["inverted_data", "params:training", "params:views", "params:runtime", "params:consensus"]
_OUTPUTS = ["model_state", "training_history", "member_scores", "training_loss"]


def create_pipeline(carry_history: bool = True, **kwargs) -> Pipeline:
    """Training; with ``carry_history`` (``select``) its seed comes from the member history (params history.carry).

    The benchmark builds it with ``carry_history=False``: its method is one run at ``params:seed``.
    """
    if carry_history:
        nodes = [
            Node(start_history, inputs=["previous_member_history", "feature_names", "params:history",
                                        "params:selection", "params:seed"],
                 outputs="history_start", name="start_history"),
            Node(train_model, inputs=[*_INPUTS, "history_start", "params:selection", "params:baselines"],
                 outputs=_OUTPUTS, name="train_model"),
        ]
    else:
        nodes = [Node(train_one_run, inputs=[*_INPUTS, "params:seed"], outputs=_OUTPUTS, name="train_model")]
    return Pipeline([*nodes, Node(plot_training_history, inputs="training_history", outputs="training_loss_plot",
                                  name="plot_training_history")])
