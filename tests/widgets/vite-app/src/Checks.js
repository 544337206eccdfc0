// The lazily loaded part: shows that it loaded, that the image decoded and that the
// web font is in use.
import { createElement as h, useEffect, useState } from "react";
import picture from "./picture.svg";

export default function Checks() {
  const [image, setImage] = useState("pending");
  const [font, setFont] = useState("pending");
  useEffect(() => {
    document.fonts
      .load('16px "Inter"')
      .then(() => setFont(document.fonts.check('16px "Inter"') ? "ok" : "missing"))
      .catch((e) => setFont(`failed ${e}`));
  }, []);
  const loaded = (event) => {
    const img = event.currentTarget;
    setImage(img.naturalWidth > 0 ? `ok ${img.naturalWidth}x${img.naturalHeight}` : "empty");
  };
  return h(
    "section",
    { className: "checks" },
    h("img", { src: picture, alt: "", width: 40, onLoad: loaded, onError: () => setImage("error") }),
    h("p", { id: "status" }, `lazy=ok image=${image} font=${font}`),
  );
}
