"""Convolutional networks of the zoo, built layer by layer from their published definitions.

- ResNet-50: He et al., "Deep Residual Learning for Image Recognition", CVPR 2016 (bottleneck
  blocks [3, 4, 6, 3]; the stride sits on the 3×3 convolution as in the common "v1.5" variant).
- VGG-16: Simonyan and Zisserman, ICLR 2015 (configuration D, no batch normalization).
- Inception-v3: Szegedy et al., "Rethinking the Inception Architecture", CVPR 2016, in the
  layout of its widely used ImageNet implementation; the auxiliary classifier is left out.
"""

from __future__ import annotations

from dlsched.ps.layers import Layer, LayerList, Shape, concat, pool

IMAGENET_CLASSES = 1000


def resnet50() -> tuple[Layer, ...]:
    """ResNet-50 at 224×224 input (25.6M parameters)."""
    net = LayerList()
    x = net.conv_bn("conv1", Shape(3, 224, 224), 64, 7, stride=2, pad=3)
    x = pool(x, 3, 2, 1)
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512), strict=True)):
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            name = f"layer{stage + 1}.{block}"
            y = net.conv_bn(f"{name}.a", x, width, 1)
            y = net.conv_bn(f"{name}.b", y, width, 3, stride=stride, pad=1)
            y = net.conv_bn(f"{name}.c", y, 4 * width, 1)
            if block == 0:
                net.conv_bn(f"{name}.downsample", x, 4 * width, 1, stride=stride)
            x = y
    net.linear("fc", x.c, IMAGENET_CLASSES)
    return tuple(net.layers)


_VGG16 = (64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0)


def vgg16() -> tuple[Layer, ...]:
    """VGG-16 at 224×224 input (138.4M parameters); 0 in the plan is a 2×2 max pool."""
    net = LayerList()
    x = Shape(3, 224, 224)
    for i, channels in enumerate(_VGG16):
        if channels == 0:
            x = pool(x, 2, 2)
        else:
            x = net.conv(f"conv{i}", x, channels, 3, pad=1, bias=True)
    d = net.linear("fc6", x.size, 4096)
    d = net.linear("fc7", d, 4096)
    net.linear("fc8", d, IMAGENET_CLASSES)
    return tuple(net.layers)


def inception_v3() -> tuple[Layer, ...]:
    """Inception-v3 at 299×299 input without the auxiliary classifier (23.8M parameters)."""
    net = LayerList()
    x = net.conv_bn("Conv2d_1a", Shape(3, 299, 299), 32, 3, stride=2)
    x = net.conv_bn("Conv2d_2a", x, 32, 3)
    x = net.conv_bn("Conv2d_2b", x, 64, 3, pad=1)
    x = pool(x, 3, 2)
    x = net.conv_bn("Conv2d_3b", x, 80, 1)
    x = net.conv_bn("Conv2d_4a", x, 192, 3)
    x = pool(x, 3, 2)
    for name, pool_features in (("Mixed_5b", 32), ("Mixed_5c", 64), ("Mixed_5d", 64)):
        x = _block_a(net, name, x, pool_features)
    x = _block_b(net, "Mixed_6a", x)
    for name, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        x = _block_c(net, name, x, c7)
    x = _block_d(net, "Mixed_7a", x)
    x = _block_e(net, "Mixed_7b", x)
    x = _block_e(net, "Mixed_7c", x)
    net.linear("fc", x.c, IMAGENET_CLASSES)
    return tuple(net.layers)


def _block_a(net: LayerList, name: str, x: Shape, pool_features: int) -> Shape:
    b1 = net.conv_bn(f"{name}.1x1", x, 64, 1)
    b5 = net.conv_bn(f"{name}.5x5_1", x, 48, 1)
    b5 = net.conv_bn(f"{name}.5x5_2", b5, 64, 5, pad=2)
    b3 = net.conv_bn(f"{name}.3x3dbl_1", x, 64, 1)
    b3 = net.conv_bn(f"{name}.3x3dbl_2", b3, 96, 3, pad=1)
    b3 = net.conv_bn(f"{name}.3x3dbl_3", b3, 96, 3, pad=1)
    bp = net.conv_bn(f"{name}.pool", pool(x, 3, 1, 1), pool_features, 1)
    return concat(b1, b5, b3, bp)


def _block_b(net: LayerList, name: str, x: Shape) -> Shape:
    b3 = net.conv_bn(f"{name}.3x3", x, 384, 3, stride=2)
    bd = net.conv_bn(f"{name}.3x3dbl_1", x, 64, 1)
    bd = net.conv_bn(f"{name}.3x3dbl_2", bd, 96, 3, pad=1)
    bd = net.conv_bn(f"{name}.3x3dbl_3", bd, 96, 3, stride=2)
    return concat(b3, bd, pool(x, 3, 2))


def _block_c(net: LayerList, name: str, x: Shape, c7: int) -> Shape:
    b1 = net.conv_bn(f"{name}.1x1", x, 192, 1)
    b7 = net.conv_bn(f"{name}.7x7_1", x, c7, 1)
    b7 = net.conv_bn(f"{name}.7x7_2", b7, c7, (1, 7), pad=(0, 3))
    b7 = net.conv_bn(f"{name}.7x7_3", b7, 192, (7, 1), pad=(3, 0))
    bd = net.conv_bn(f"{name}.7x7dbl_1", x, c7, 1)
    bd = net.conv_bn(f"{name}.7x7dbl_2", bd, c7, (7, 1), pad=(3, 0))
    bd = net.conv_bn(f"{name}.7x7dbl_3", bd, c7, (1, 7), pad=(0, 3))
    bd = net.conv_bn(f"{name}.7x7dbl_4", bd, c7, (7, 1), pad=(3, 0))
    bd = net.conv_bn(f"{name}.7x7dbl_5", bd, 192, (1, 7), pad=(0, 3))
    bp = net.conv_bn(f"{name}.pool", pool(x, 3, 1, 1), 192, 1)
    return concat(b1, b7, bd, bp)


def _block_d(net: LayerList, name: str, x: Shape) -> Shape:
    b3 = net.conv_bn(f"{name}.3x3_1", x, 192, 1)
    b3 = net.conv_bn(f"{name}.3x3_2", b3, 320, 3, stride=2)
    b7 = net.conv_bn(f"{name}.7x7x3_1", x, 192, 1)
    b7 = net.conv_bn(f"{name}.7x7x3_2", b7, 192, (1, 7), pad=(0, 3))
    b7 = net.conv_bn(f"{name}.7x7x3_3", b7, 192, (7, 1), pad=(3, 0))
    b7 = net.conv_bn(f"{name}.7x7x3_4", b7, 192, 3, stride=2)
    return concat(b3, b7, pool(x, 3, 2))


def _block_e(net: LayerList, name: str, x: Shape) -> Shape:
    b1 = net.conv_bn(f"{name}.1x1", x, 320, 1)
    b3 = net.conv_bn(f"{name}.3x3_1", x, 384, 1)
    b3a = net.conv_bn(f"{name}.3x3_2a", b3, 384, (1, 3), pad=(0, 1))
    b3b = net.conv_bn(f"{name}.3x3_2b", b3, 384, (3, 1), pad=(1, 0))
    bd = net.conv_bn(f"{name}.3x3dbl_1", x, 448, 1)
    bd = net.conv_bn(f"{name}.3x3dbl_2", bd, 384, 3, pad=1)
    bda = net.conv_bn(f"{name}.3x3dbl_3a", bd, 384, (1, 3), pad=(0, 1))
    bdb = net.conv_bn(f"{name}.3x3dbl_3b", bd, 384, (3, 1), pad=(1, 0))
    bp = net.conv_bn(f"{name}.pool", pool(x, 3, 1, 1), 192, 1)
    return concat(b1, b3a, b3b, bda, bdb, bp)
