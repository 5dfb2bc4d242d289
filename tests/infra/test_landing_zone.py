"""`privateNetworking` in a landing zone (infra/app/network.bicep, private-endpoint.bicep): every subnet has a network
security group, the app subnet an explicit way out (a NAT gateway, or the landing zone's route table), private
endpoints can go into centrally managed private DNS zones, and what a subnet carries is declared with the subnet.

Parsed with pycep-parser like tests/infra/test_bicep.py; the property names follow Microsoft's templates reference
(virtualNetworks 2023-11-01: subnets' `networkSecurityGroup`, `natGateway`, `routeTable`; natGateways;
publicIPAddresses).
"""

from __future__ import annotations

from typing import Any

from tests.infra.test_bicep import INFRA, MAIN, accessor, azd_parameters, body, parse, resources

NETWORK = INFRA / "app" / "network.bicep"
ENDPOINT = INFRA / "app" / "private-endpoint.bicep"


def subnets() -> dict[str, dict[str, Any]]:
    vnet = body(resources(NETWORK)["vnet"])
    return {subnet["name"]: subnet["properties"] for subnet in vnet["properties"]["subnets"]}


def conditional(condition: Any, true_value: Any, false_value: Any) -> dict[str, Any]:
    return {
        "operator": {
            "type": "conditional",
            "operands": {"condition": condition, "true_value": true_value, "false_value": false_value},
        }
    }


def test_every_subnet_has_its_network_security_group_declared_with_it() -> None:
    """A landing zone's deny policy refuses a subnet without an NSG; declared inside the virtual network, where the
    subnets are, a re-provision writes the association back instead of stripping it."""
    found = subnets()
    assert set(found) == {"app", "private-endpoints"}
    groups = {
        name: r for name, r in resources(NETWORK).items() if r["type"] == "Microsoft.Network/networkSecurityGroups"
    }
    assert sorted(str(properties["networkSecurityGroup"]["id"]) for properties in found.values()) == sorted(
        str(accessor(name, "id")) for name in groups
    )
    assert len(groups) == len(found), "one NSG per subnet"
    for group in groups.values():
        assert "condition" not in group["config"], "an NSG exists whenever its subnet does"
    # The subnets are the virtual network's own (no separate subnet resources whose absence would delete them).
    assert not [r for r in resources(NETWORK).values() if r["type"] == "Microsoft.Network/virtualNetworks/subnets"]


def test_the_app_subnet_goes_out_through_a_nat_gateway_or_the_landing_zones_route() -> None:
    """New virtual networks lose implicit outbound access; without an explicit way out the app reaches neither the
    origin nor Entra ID nor Application Insights."""
    app = subnets()["app"]
    enabled = "natGatewayEnabled"
    assert parse(NETWORK)["variables"][enabled]["value"] == {
        "function": {"type": "empty", "parameters": {"item_to_test": "egressRouteTableId"}}
    }
    assert app["natGateway"] == conditional(enabled, {"id": accessor("natGateway", "id")}, None)
    assert app["routeTable"] == conditional(enabled, None, {"id": "egressRouteTableId"})
    gateway = resources(NETWORK)["natGateway"]
    assert gateway["config"]["condition"] == enabled
    assert body(gateway)["sku"] == {"name": "Standard"}
    assert body(gateway)["properties"]["publicIpAddresses"] == [{"id": accessor("natPublicIp", "id")}]
    address = resources(NETWORK)["natPublicIp"]
    assert address["config"]["condition"] == enabled
    assert body(address)["sku"] == {"name": "Standard"}
    assert body(address)["properties"]["publicIPAllocationMethod"] == "Static"
    assert body(parse(MAIN)["modules"]["network"])["params"]["egressRouteTableId"] == "egressRouteTableId"
    assert azd_parameters({})["egressRouteTableId"] == ""
    assert app["delegations"][0]["properties"]["serviceName"] == "Microsoft.App/environments"


def test_address_space_and_dns_servers_are_the_landing_zones_to_give() -> None:
    params = body(parse(MAIN)["modules"]["network"])["params"]
    assert (params["addressPrefix"], params["appSubnetPrefix"], params["privateEndpointSubnetPrefix"]) == (
        "vnetAddressPrefix",
        "appSubnetPrefix",
        "privateEndpointSubnetPrefix",
    )
    assert params["dnsServers"] == "vnetDnsServerList"
    unset = azd_parameters({})
    assert (unset["vnetAddressPrefix"], unset["appSubnetPrefix"], unset["privateEndpointSubnetPrefix"]) == (
        "10.0.0.0/16",
        "10.0.1.0/24",
        "10.0.2.0/24",
    )
    vnet = body(resources(NETWORK)["vnet"])["properties"]
    assert vnet["dhcpOptions"] == conditional(
        {"function": {"type": "empty", "parameters": {"item_to_test": "dnsServers"}}},
        None,
        {"dnsServers": "dnsServers"},
    )


def test_private_endpoints_can_register_in_centrally_managed_dns_zones() -> None:
    """A landing zone keeps the privatelink.* zones in one place: zones created here would collide with them."""
    endpoint = resources(ENDPOINT)
    create = "createZone"
    assert parse(ENDPOINT)["variables"][create]["value"] == {
        "function": {"type": "empty", "parameters": {"item_to_test": "existingDnsZonesResourceGroupId"}}
    }
    assert endpoint["zone"]["config"]["condition"] == create
    assert endpoint["link"]["config"]["condition"] == create
    assert parse(ENDPOINT)["variables"]["zoneId"]["value"] == conditional(
        create,
        accessor("zone", "id"),
        "${existingDnsZonesResourceGroupId}/providers/Microsoft.Network/privateDnsZones/${dnsZoneName}",
    )
    (config,) = body(endpoint["zoneGroup"])["properties"]["privateDnsZoneConfigs"]
    assert config["properties"]["privateDnsZoneId"] == "zoneId"
    modules = parse(MAIN)["modules"]
    for name in ("storageEndpoints", "searchEndpoint", "vaultEndpoint"):
        assert body(modules[name])["params"]["existingDnsZonesResourceGroupId"] == "privateDnsZonesResourceGroupId"
    assert azd_parameters({})["privateDnsZonesResourceGroupId"] == ""


def test_storage_and_the_vault_are_closed_to_the_public_network_under_private_networking() -> None:
    storage = body(resources(INFRA / "app" / "storage.bicep")["storage"])["properties"]
    vault = body(resources(INFRA / "app" / "keyvault.bicep")["vault"])["properties"]
    assert storage["networkAcls"]["defaultAction"] == conditional("privateNetworking", "Deny", "Allow")
    assert vault["networkAcls"]["defaultAction"] == conditional("privateNetworking", "Deny", "Allow")
    assert vault["publicNetworkAccess"] == conditional("privateNetworking", "Disabled", "Enabled")
