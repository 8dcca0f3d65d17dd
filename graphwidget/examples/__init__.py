"""Built-in examples: the seed's ``repeat`` vs broadcast homography warp, a select loop, a long chain, a small
CNN — and the demo that tells their story (``python -m graphwidget demo``)."""
from .homography import (
    SmallConvNet,
    convnet_loss,
    homography_broadcast,
    homography_inputs,
    homography_repeat,
    select_loop,
    tiny_chain,
)

__all__ = ["homography_inputs", "homography_repeat", "homography_broadcast", "select_loop", "tiny_chain",
           "SmallConvNet", "convnet_loss"]
