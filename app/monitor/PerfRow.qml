import QtQuick
import QtQuick.Controls.Material
import QtQuick.Layouts

// One "label   value" line of the performance overlay.
RowLayout {
    id: root
    property string label
    property string value
    property bool mono: true   // digits line up; names read better proportional
    property alias valueItem: valueText
    Theme { id: theme; dark: root.Material.theme === Material.Dark }

    spacing: 8
    Text {
        text: root.label
        color: theme.overlayLabel
        font.pixelSize: 12
    }
    Text {
        id: valueText
        text: root.value
        color: theme.overlayValue
        font.pixelSize: 12
        font.family: root.mono ? "DejaVu Sans Mono" : "DejaVu Sans"
        horizontalAlignment: Text.AlignRight
        elide: Text.ElideRight
        Layout.fillWidth: true
    }
}
