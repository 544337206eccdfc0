document.getElementById("board").dataset.ready = "yes";
