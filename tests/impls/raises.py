"""An impl whose kernel raises."""


def custom_kernel(data):
    raise RuntimeError("kernel exploded on purpose")
