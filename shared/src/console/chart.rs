//! Charts as SVG, drawn on the server from the rollups: a line of day points for a
//! year or month points beyond, a range band where there is one, the reference range
//! shaded where the synonym table knows one. Pure: numbers in, markup out.
