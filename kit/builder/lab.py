"""What `make lab` serves: the course's notebooks as JupyterLab sees them.

`make lab` points JUPYTER_CONFIG_PATH at tools/lab/, which holds:

- labconfig/default_setting_overrides.json: JupyterLab never fetches news,
  so no "get notified about official Jupyter news?" pop-up covers the
  first plots (the setting `fetchNews` of
  @jupyterlab/apputils-extension:notification);
- jupyter_server_config.json: the file browser leaves out src/ (the
  sources, solutions between markers) and solutions/ (the solved copies:
  `make lab LAB_ROOT=notebooks/solutions` opens them, and any path still
  opens by its URL), and notebooks are served by the class below.
"""

from jupyter_server.services.contents.largefilemanager import (
    AsyncLargeFileManager)


def language_info():
    """What the course's kernel (ipykernel, this Python) reports."""
    from ipykernel.ipkernel import IPythonKernel
    return dict(IPythonKernel.language_info)


class CourseContentsManager(AsyncLargeFileManager):
    """Serves each notebook with the language_info its kernel will report.

    JupyterLab writes the kernel's kernelspec and language_info (with this
    Python's version) into a notebook as soon as its kernel starts; where
    they differ from the file's, the notebook shows as modified before the
    learner has typed anything. `kit build` writes ipykernel's kernelspec;
    the version cannot be known there, so it is filled in here.
    """

    async def get(self, path, content=True, type=None, format=None,
                  **kwargs):
        model = await super().get(path, content=content, type=type,
                                  format=format, **kwargs)
        notebook = model.get("content")
        if model["type"] != "notebook" or not notebook:
            return model  # a folder, a file, or a listing without content
        if notebook.metadata.get("kernelspec", {}).get("name") == "python3":
            notebook.metadata["language_info"] = language_info()
        return model
