export const closing = "</script>";
